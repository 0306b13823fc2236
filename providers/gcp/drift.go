package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// drift names the first field of want (a Stack's message) that have (the resource as listed)
// does not hold as want says, "" when it holds every one: the mark of a change made outside
// fleetgate to a resource whose ownership record still says it is as fleetgate wrote it. Only what
// want sets is compared, so what GCE fills in (ids, fingerprints, defaults, timestamps) is not
// drift; a field want sets to its zero value matches one GCE leaves out; links compare by their
// project-relative part. URL map route rule priorities compare as the deployer would keep them.
func drift(k Kind, want, have proto.Message) string {
	if k == KindURLMap {
		want = proto.Clone(want)
		stablePriorities(want.(*computepb.UrlMap), have.(*computepb.UrlMap))
	}
	return messageDrift("", want.ProtoReflect(), have.ProtoReflect())
}

func messageDrift(path string, want, have protoreflect.Message) string {
	var found string
	want.Range(func(fd protoreflect.FieldDescriptor, wv protoreflect.Value) bool {
		p := strings.TrimPrefix(path+"."+fd.JSONName(), ".")
		if fd.Name() == "description" && path == "" {
			return true // the ownership record, compared by the deployer itself
		}
		if !have.Has(fd) {
			if !isZero(fd, wv) {
				found = p
			}
			return found == ""
		}
		hv := have.Get(fd)
		switch {
		case fd.IsList():
			wl, hl := wv.List(), hv.List()
			if wl.Len() != hl.Len() {
				found = p
				return false
			}
			for i := range wl.Len() {
				if d := valueDrift(fmt.Sprintf("%s[%d]", p, i), fd, wl.Get(i), hl.Get(i)); d != "" {
					found = d
					return false
				}
			}
		case fd.IsMap():
			wm, hm := wv.Map(), hv.Map()
			if wm.Len() != hm.Len() {
				found = p
				return false
			}
			wm.Range(func(key protoreflect.MapKey, v protoreflect.Value) bool {
				if !hm.Has(key) {
					found = p + "[" + key.String() + "]"
				} else {
					found = valueDrift(p+"["+key.String()+"]", fd.MapValue(), v, hm.Get(key))
				}
				return found == ""
			})
		default:
			found = valueDrift(p, fd, wv, hv)
		}
		return found == ""
	})
	return found
}

func valueDrift(path string, fd protoreflect.FieldDescriptor, want, have protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return messageDrift(path, want.Message(), have.Message())
	case protoreflect.StringKind:
		if w, h := want.String(), have.String(); w == h || isLink(w) && sameLink(w, h) {
			return ""
		}
		return path
	}
	if want.Equal(have) {
		return ""
	}
	return path
}

// isLink says whether s is a resource URL, full or partial, which GCE may return in the other form.
func isLink(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "projects/")
}

func isZero(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	switch {
	case fd.IsList():
		return v.List().Len() == 0
	case fd.IsMap():
		return v.Map().Len() == 0
	case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
		return !v.Message().IsValid() || proto.Size(v.Message().Interface()) == 0
	}
	return v.Equal(fd.Default())
}

// updatable says whether a kind is updated in place with its whole spec, and so compared with its
// listed state for drift: the other kinds are replaced (their names hash what they are) or change
// through setters that compare the listed state already.
func (k Kind) updatable() bool {
	switch k {
	case KindFirewall, KindHealthCheck, KindBackendService, KindURLMap:
		return true
	}
	return false
}

// normalForms remember, per resource, a listed state that differs from its spec only in what GCE
// rewrites, so that it is not taken for drift again. An entry holds while the spec and the listed
// state are the ones remembered: a later change, by anyone, is compared again.
type normalForms struct {
	mu sync.Mutex
	m  map[string]string
}

func newNormalForms() *normalForms { return &normalForms{m: map[string]string{}} }

func normalKey(project string, k resKey) string {
	return project + "/" + k.kind.String() + "/" + k.scope.String() + "/" + k.name
}

func normalValue(spec string, listed proto.Message) string {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(listed)
	if err != nil {
		return "" // never remembered: compared as drift every time
	}
	sum := sha256.Sum256(b)
	return spec + "|" + hex.EncodeToString(sum[:12])
}

func (n *normalForms) is(project string, k resKey, spec string, listed proto.Message) bool {
	v := normalValue(spec, listed)
	n.mu.Lock()
	defer n.mu.Unlock()
	return v != "" && n.m[normalKey(project, k)] == v
}

func (n *normalForms) set(project string, k resKey, spec string, listed proto.Message) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.m[normalKey(project, k)] = normalValue(spec, listed)
}

func (n *normalForms) forget(project string, k resKey) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.m, normalKey(project, k))
}
