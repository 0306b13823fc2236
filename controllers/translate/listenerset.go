package translate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

const kindListenerSet = "ListenerSet"

// listenerSet is a ListenerSet whose parentRef names one of our gateways.
type listenerSet struct {
	obj   snapshot.Object[gwv1.ListenerSet]
	group *gatewayGroup
	// rejectReason and rejectMsg say why the whole set is not attached (NotAllowed,
	// ParentNotAccepted); such a set contributes no listeners.
	rejectReason, rejectMsg string
	listeners               []*listener
	// accepted is set once its listeners are validated: at least one of them can be programmed.
	accepted bool
}

func (s *listenerSet) ls() *gwv1.ListenerSet { return s.obj.Obj }

// ListenerSetStatus is the status fleetgate owns on one ListenerSet.
type ListenerSetStatus struct {
	Ref        ObjectRef `json:"ref"`
	Generation int64     `json:"generation"`
	// Gateway is the key of the gateway group the set's parentRef names.
	Gateway    string                     `json:"gateway"`
	Conditions []metav1.Condition         `json:"conditions"`
	Listeners  []gwv1.ListenerEntryStatus `json:"listeners,omitempty"`
}

// lookupGroup finds the gateway group of namespace/name as seen from cluster: the Gateway in that
// cluster, or the fleet gateway of that namespace/name.
func (t *translator) lookupGroup(cluster, ns, name string) *gatewayGroup {
	if grp := t.groupByRef[groupRef{nsName{cluster, ns, name}, false}]; grp != nil {
		return grp
	}
	return t.groupByRef[groupRef{nsName{"", ns, name}, true}]
}

// groupRef names a gateway group as routes and ListenerSets find it: by cluster, namespace and
// name, or, for a fleet gateway, by namespace and name. Its keys are strings built from those;
// building them for every route of every pass was a tenth of the lookups' time.
type groupRef struct {
	nsName
	fleet bool
}

// attachListenerSets gives every ListenerSet that names one of our gateways its verdict and merges
// the listeners of the allowed ones into the gateway, after the Gateway's own listeners, in the
// spec's precedence: oldest set first, then by namespace/name. A set's listener that conflicts with
// a listener of higher precedence loses alone; the earlier listener keeps serving.
func (t *translator) attachListenerSets() {
	t.setByKey = map[nsName]*listenerSet{}
	for _, o := range t.snap.ListenerSets {
		ref := o.Obj.Spec.ParentRef
		if cmp.Or(ptrStr(ref.Group), gwv1.GroupName) != gwv1.GroupName || cmp.Or(ptrStr(ref.Kind), "Gateway") != "Gateway" {
			continue
		}
		grp := t.lookupGroup(o.Cluster, cmp.Or(ptrStr(ref.Namespace), o.Obj.Namespace), string(ref.Name))
		if grp == nil {
			continue // not ours: another controller's Gateway, or none
		}
		s := &listenerSet{obj: o, group: grp}
		grp.sets = append(grp.sets, s)
		t.setByKey[nsName{o.Cluster, o.Obj.Namespace, o.Obj.Name}] = s
	}
	for _, grp := range t.groups {
		slices.SortStableFunc(grp.sets, func(a, b *listenerSet) int {
			return cmp.Or(a.ls().CreationTimestamp.Compare(b.ls().CreationTimestamp.Time),
				cmp.Compare(a.ls().Namespace, b.ls().Namespace), cmp.Compare(a.ls().Name, b.ls().Name),
				cmp.Compare(a.obj.Cluster, b.obj.Cluster))
		})
		parent := grp.primary()
		for _, s := range grp.sets {
			if parent == nil {
				s.rejectReason, s.rejectMsg = string(gwv1.ListenerSetReasonParentNotAccepted), "The parent Gateway is not accepted"
				continue
			}
			if ok, msg := t.allowsListenerSet(parent.object(), s); !ok {
				s.rejectReason, s.rejectMsg = string(gwv1.ListenerSetReasonNotAllowed), msg
				continue
			}
			for _, e := range s.ls().Spec.Listeners {
				l := newListener(grp, nil, gwv1.Listener(e))
				l.set = s
				t.validateListener(l)
				conflictWithEarlier(grp.listeners, l)
				s.listeners = append(s.listeners, l)
				grp.listeners = append(grp.listeners, l)
				if l.programmable() {
					s.accepted = true
				}
			}
		}
	}
}

// primary is the oldest valid Gateway of the group, whose spec governs the group-wide settings
// (allowedListeners, addresses, infrastructure); nil when no Gateway is valid.
func (grp *gatewayGroup) primary() *gatewayObject {
	for _, g := range grp.gateways {
		if g.invalidReason == "" {
			return g
		}
	}
	return nil
}

// allowsListenerSet applies the Gateway's allowedListeners (default: none) to a set.
func (t *translator) allowsListenerSet(gw *gwv1.Gateway, s *listenerSet) (bool, string) {
	from := gwv1.NamespacesFromNone
	var sel *metav1.LabelSelector
	if al := gw.Spec.AllowedListeners; al != nil && al.Namespaces != nil {
		if al.Namespaces.From != nil {
			from = *al.Namespaces.From
		}
		sel = al.Namespaces.Selector
	}
	ns := s.ls().Namespace
	switch from {
	case gwv1.NamespacesFromAll:
		return true, ""
	case gwv1.NamespacesFromSame:
		if ns == gw.Namespace {
			return true, ""
		}
		return false, fmt.Sprintf("Gateway %s/%s allows ListenerSets only from its own namespace", gw.Namespace, gw.Name)
	case gwv1.NamespacesFromSelector:
		if sel == nil {
			return false, "Gateway allowedListeners.namespaces.selector is required with from: Selector"
		}
		selector, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return false, fmt.Sprintf("Gateway allowedListeners.namespaces.selector: %v", err)
		}
		if selector.Matches(labels.Set(t.idx.namespaceLabels(s.obj.Cluster, ns))) {
			return true, ""
		}
		return false, fmt.Sprintf("namespace %s is not selected by Gateway %s/%s allowedListeners", ns, gw.Namespace, gw.Name)
	}
	return false, fmt.Sprintf("Gateway %s/%s does not allow ListenerSets", gw.Namespace, gw.Name)
}

// conflictWithEarlier marks l Conflicted when a listener of higher precedence that is still in play
// uses its port with another protocol, or the same protocol and hostname.
func conflictWithEarlier(earlier []*listener, l *listener) {
	if defaultKinds(l.spec.Protocol) == nil {
		return
	}
	for _, e := range earlier {
		if !e.acceptedOK || e.conflictReason != "" || defaultKinds(e.spec.Protocol) == nil ||
			e.spec.Port != l.spec.Port || transport(e.spec.Protocol) != transport(l.spec.Protocol) {
			continue
		}
		if e.spec.Protocol != l.spec.Protocol {
			l.conflict(gwv1.ListenerReasonProtocolConflict, fmt.Sprintf("port %d is already used with protocol %s by %s", l.spec.Port, e.spec.Protocol, e.describe()))
			return
		}
		if e.hostname == l.hostname {
			l.conflict(gwv1.ListenerReasonHostnameConflict, fmt.Sprintf("port %d and hostname %q are already used by %s", l.spec.Port, l.hostname, e.describe()))
			return
		}
	}
}

// describe names a listener for messages: its name, and its ListenerSet when it has one.
func (l *listener) describe() string {
	if l.set != nil {
		return fmt.Sprintf("listener %q of ListenerSet %s/%s", l.spec.Name, l.set.ls().Namespace, l.set.ls().Name)
	}
	return fmt.Sprintf("listener %q of the Gateway", l.spec.Name)
}

// listenerSetStatuses emits the status of every set of the gateway group once routes are attached.
func (t *translator) listenerSetStatuses(grp *gatewayGroup) {
	for _, s := range grp.sets {
		ls := s.ls()
		gen := ls.Generation
		st := ListenerSetStatus{
			Ref:        ObjectRef{Cluster: s.obj.Cluster, Kind: kindListenerSet, Namespace: ls.Namespace, Name: ls.Name},
			Generation: gen,
			Gateway:    grp.key,
		}
		accepted := string(gwv1.ListenerSetConditionAccepted)
		programmed := string(gwv1.ListenerSetConditionProgrammed)
		if s.rejectReason != "" {
			st.Conditions = []metav1.Condition{
				cond(accepted, false, s.rejectReason, s.rejectMsg, gen),
				cond(programmed, false, s.rejectReason, s.rejectMsg, gen),
			}
			t.res.ListenerSets = append(t.res.ListenerSets, st)
			continue
		}
		var bad []string
		for _, l := range s.listeners {
			ls := l.status(gen)
			if l.conflictReason != "" {
				// A listener that lost to one of higher precedence says why it is not programmed.
				if c := findCondition(ls.Conditions, string(gwv1.ListenerConditionProgrammed)); c != nil {
					c.Reason, c.Message = l.conflictReason, l.conflictMsg
				}
			}
			st.Listeners = append(st.Listeners, gwv1.ListenerEntryStatus(ls))
			if !l.programmable() {
				bad = append(bad, string(l.spec.Name))
			}
		}
		switch {
		case !s.accepted:
			msg := "No listener is valid: " + strings.Join(bad, ", ")
			st.Conditions = []metav1.Condition{
				cond(accepted, false, string(gwv1.ListenerSetReasonListenersNotValid), msg, gen),
				cond(programmed, false, string(gwv1.ListenerSetReasonListenersNotValid), msg, gen),
			}
		case len(bad) > 0:
			st.Conditions = []metav1.Condition{
				cond(accepted, true, string(gwv1.ListenerSetReasonListenersNotValid), "Invalid or conflicted listeners: "+strings.Join(bad, ", "), gen),
				cond(programmed, false, string(gwv1.ListenerSetReasonPending), "Waiting for the load balancer and the proxies", gen),
			}
		default:
			st.Conditions = []metav1.Condition{
				cond(accepted, true, string(gwv1.ListenerSetReasonAccepted), "ListenerSet is accepted", gen),
				cond(programmed, false, string(gwv1.ListenerSetReasonPending), "Waiting for the load balancer and the proxies", gen),
			}
		}
		t.res.ListenerSets = append(t.res.ListenerSets, st)
	}
}

// attachedSets counts the gateway group's accepted ListenerSets (Gateway status.attachedListenerSets).
func (grp *gatewayGroup) attachedSets() int32 {
	var n int32
	for _, s := range grp.sets {
		if s.rejectReason == "" && s.accepted {
			n++
		}
	}
	return n
}
