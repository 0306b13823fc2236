package translate

import (
	"cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pathRank orders HTTP path match kinds. Exact first and PathPrefix by length follow the spec;
// the place of RegularExpression is implementation-specific: fleetgate puts it between Exact and
// PathPrefix so that a catch-all prefix never shadows a regex.
type pathRank int

const (
	rankExact pathRank = iota
	rankRegex
	rankPrefix
)

// precedence is the sort key of one compiled match inside a virtual host.
type precedence struct {
	grpc bool
	// HTTPRoute criteria.
	path    pathRank
	pathLen int
	method  bool
	headers int
	queries int
	// GRPCRoute criteria: characters in the matching service and method.
	serviceLen int
	methodLen  int
	// Tie-breakers across and within routes.
	created metav1.Time
	name    string // namespace/name
	cluster string
	rule    int
	match   int
}

// comparePrecedence returns <0 when a must be tried before b. HTTPRoute matches come before
// GRPCRoute matches; the two never share a hostname on one listener (conflicts are rejected), so
// this only makes the order total.
func comparePrecedence(a, b precedence) int {
	if a.grpc != b.grpc {
		if !a.grpc {
			return -1
		}
		return 1
	}
	var c int
	if !a.grpc {
		c = cmp.Or(
			cmp.Compare(a.path, b.path),
			-cmp.Compare(a.pathLen, b.pathLen),
			-compareBool(a.method, b.method),
			-cmp.Compare(a.headers, b.headers),
			-cmp.Compare(a.queries, b.queries),
		)
	} else {
		c = cmp.Or(
			-cmp.Compare(a.serviceLen, b.serviceLen),
			-cmp.Compare(a.methodLen, b.methodLen),
			-cmp.Compare(a.headers, b.headers),
		)
	}
	return cmp.Or(c,
		a.created.Compare(b.created.Time),
		cmp.Compare(a.name, b.name),
		cmp.Compare(a.cluster, b.cluster),
		cmp.Compare(a.rule, b.rule),
		cmp.Compare(a.match, b.match),
	)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
