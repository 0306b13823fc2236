package fleet

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Bounds of a cache's string table (CacheTransform): what repeats across routes is short and
// few (conditions' types, reasons and messages, controller names, parent groups, kinds and names,
// namespaces), and a tenant writing unique strings fills the table once and no more.
const (
	internMaxStrings = 4096
	internMaxLen     = 256
)

// CacheTransform is a cache's transform: it strips managedFields, which nothing reads from the
// caches (the in-cluster provider reads its own back uncached) and which are a large part of
// every cached route, and makes the strings every route repeats share one copy per cache: each
// decoded route carried its own copies of the same few hundred bytes (its Namespace, its parents'
// group, kind and name in spec and status, our controller's name, its conditions' types,
// reasons and messages).
func CacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	in := &interner{strings: map[string]string{}}
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return obj, err
		}
		switch o := obj.(type) {
		case *gwv1.HTTPRoute:
			in.route(&o.ObjectMeta, o.Spec.ParentRefs, &o.Status.RouteStatus)
		case *gwv1.GRPCRoute:
			in.route(&o.ObjectMeta, o.Spec.ParentRefs, &o.Status.RouteStatus)
		case *gwv1.TLSRoute:
			in.route(&o.ObjectMeta, o.Spec.ParentRefs, &o.Status.RouteStatus)
		case *gwv1.TCPRoute:
			in.route(&o.ObjectMeta, o.Spec.ParentRefs, &o.Status.RouteStatus)
		case *gwv1.UDPRoute:
			in.route(&o.ObjectMeta, o.Spec.ParentRefs, &o.Status.RouteStatus)
		case metav1.Object:
			o.SetNamespace(in.intern(o.GetNamespace()))
		}
		return obj, nil
	}
}

// interner hands out one copy of each string it was given, up to its bounds. The informers of a
// cache run their transforms concurrently.
type interner struct {
	mu      sync.Mutex
	strings map[string]string
}

func (in *interner) intern(s string) string {
	if s == "" || len(s) > internMaxLen {
		return s
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if c, ok := in.strings[s]; ok {
		return c
	}
	if len(in.strings) < internMaxStrings {
		in.strings[s] = s
	}
	return s
}

func (in *interner) route(m *metav1.ObjectMeta, refs []gwv1.ParentReference, st *gwv1.RouteStatus) {
	m.Namespace = in.intern(m.Namespace)
	for i := range refs {
		in.parentRef(&refs[i])
	}
	for i := range st.Parents {
		p := &st.Parents[i]
		p.ControllerName = gwv1.GatewayController(in.intern(string(p.ControllerName)))
		in.parentRef(&p.ParentRef)
		for j := range p.Conditions {
			c := &p.Conditions[j]
			c.Type, c.Reason, c.Message = in.intern(c.Type), in.intern(c.Reason), in.intern(c.Message)
		}
	}
}

func (in *interner) parentRef(r *gwv1.ParentReference) {
	r.Name = gwv1.ObjectName(in.intern(string(r.Name)))
	if r.Group != nil {
		*r.Group = gwv1.Group(in.intern(string(*r.Group)))
	}
	if r.Kind != nil {
		*r.Kind = gwv1.Kind(in.intern(string(*r.Kind)))
	}
	if r.Namespace != nil {
		*r.Namespace = gwv1.Namespace(in.intern(string(*r.Namespace)))
	}
	if r.SectionName != nil {
		*r.SectionName = gwv1.SectionName(in.intern(string(*r.SectionName)))
	}
}
