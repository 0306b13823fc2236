package translate

import (
	"cmp"
	"slices"
	"strings"
)

// hostMatches reports whether pattern (exact, "*.suffix" wildcard, or "" for any) matches the
// exact or wildcard hostname host. A wildcard matches one or more labels ("*.example.com" matches
// "a.b.example.com" but not "example.com"); a wildcard host is matched by a wildcard pattern of
// the same or a shorter suffix.
func hostMatches(pattern, host string) bool {
	if pattern == "" || pattern == host {
		return true
	}
	suffix, ok := strings.CutPrefix(pattern, "*")
	if !ok {
		return false
	}
	// suffix is ".example.com"; host must end with it and keep at least one label before.
	h := strings.TrimPrefix(host, "*")
	if strings.HasPrefix(host, "*") {
		// A wildcard host is covered only when its own suffix is the same or longer.
		return strings.HasSuffix(h, suffix)
	}
	return len(h) > len(suffix) && strings.HasSuffix(h, suffix)
}

// intersectHostnames returns the hostnames a route serves on a listener, per the Gateway API
// rules: the route hostnames that match the listener hostname, or the listener hostname when the
// route has none, or (listener wildcard narrower than a route wildcard) the listener hostname.
// The empty string stands for "any hostname". The result is nil when there is no intersection.
func intersectHostnames(listener string, route []string) []string {
	if len(route) == 0 {
		return []string{listener}
	}
	var out []string
	for _, h := range route {
		switch {
		case hostMatches(listener, h):
			out = append(out, h)
		case hostMatches(h, listener):
			out = append(out, listener)
		default:
			continue
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// compareSpecificity orders hostnames most specific first: exact names, then wildcards with more
// labels, then "" (any). Ties break alphabetically so the order is total.
func compareSpecificity(a, b string) int {
	rank := func(h string) int {
		switch {
		case h == "" || h == "*":
			return 2
		case strings.HasPrefix(h, "*"):
			return 1
		}
		return 0
	}
	return cmp.Or(
		cmp.Compare(rank(a), rank(b)),
		-cmp.Compare(strings.Count(a, "."), strings.Count(b, ".")),
		-cmp.Compare(len(a), len(b)),
		cmp.Compare(a, b),
	)
}

// sortBySpecificity sorts hostnames as compareSpecificity orders them, reading each one's rank and
// labels once: a listener may have thousands.
func sortBySpecificity(hosts []string) {
	type keyed struct {
		h          string
		rank, dots int
	}
	ks := make([]keyed, len(hosts))
	for i, h := range hosts {
		k := keyed{h: h, dots: strings.Count(h, ".")}
		switch {
		case h == "" || h == "*":
			k.rank = 2
		case strings.HasPrefix(h, "*"):
			k.rank = 1
		}
		ks[i] = k
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), -cmp.Compare(a.dots, b.dots), -cmp.Compare(len(a.h), len(b.h)), cmp.Compare(a.h, b.h))
	})
	for i, k := range ks {
		hosts[i] = k.h
	}
}

// validHostname is a cheap RFC 1123 check with an optional leading "*." label; the CRD enforces
// the same, but translation must not trust its input.
func validHostname(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return false
			}
		}
	}
	return true
}
