package translate

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/providers"
)

// ObjectRef names one object in one member cluster, so the status writer can find it.
type ObjectRef struct {
	Cluster   string `json:"cluster"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r ObjectRef) compare(o ObjectRef) int {
	return cmp.Or(cmp.Compare(r.Cluster, o.Cluster), cmp.Compare(r.Kind, o.Kind),
		cmp.Compare(r.Namespace, o.Namespace), cmp.Compare(r.Name, o.Name))
}

// ClassStatus is the status fleetgate owns on one GatewayClass.
type ClassStatus struct {
	Ref        ObjectRef          `json:"ref"`
	Generation int64              `json:"generation"`
	Conditions []metav1.Condition `json:"conditions"`
}

// GatewayStatus is the status fleetgate owns on one Gateway object. Addresses stay empty until
// SetProgrammed merges the provider's answer.
type GatewayStatus struct {
	Ref        ObjectRef `json:"ref"`
	Generation int64     `json:"generation"`
	// Gateway is the key of the ir.Config and providers.LoadBalancer this object belongs to.
	Gateway    string                      `json:"gateway"`
	Addresses  []gwv1.GatewayStatusAddress `json:"addresses,omitempty"`
	Conditions []metav1.Condition          `json:"conditions"`
	Listeners  []gwv1.ListenerStatus       `json:"listeners,omitempty"`
	// AttachedListenerSets is set when the Gateway allows ListenerSets.
	AttachedListenerSets *int32 `json:"attachedListenerSets,omitempty"`
}

// RouteStatus holds only fleetgate's RouteParentStatus entries of one route (one per parentRef
// that names a Gateway of our classes); the writer merges them with other controllers' entries.
type RouteStatus struct {
	Ref        ObjectRef                `json:"ref"`
	Generation int64                    `json:"generation"`
	Parents    []gwv1.RouteParentStatus `json:"parents"`
}

// Programmed is the apply result for one gateway, merged into the translate verdict.
type Programmed struct {
	// Ready is true once the provider reports the load balancer ready and the proxies ACKed.
	Ready bool
	// Reason and Message explain a false Ready (e.g. Pending, NoResources, AddressNotAssigned).
	Reason    string
	Message   string
	Addresses []gwv1.GatewayStatusAddress
	// Credentials is the refusal of the cloud account that keeps the gateway from being
	// programmed: its Gateways get a Warning notice (Message) besides the condition, whose reason
	// (Pending) does not change and so is not told by the status writer's transition Event.
	Credentials *providers.CredentialsError
}

// SetProgrammed merges the apply result of one gateway (key as in ir.Config.Gateway) into the
// Gateway and listener Programmed conditions of r. Objects that translation found invalid keep
// Programmed=False/Invalid whatever the dataplane says. It is pure and idempotent.
func (r *Result) SetProgrammed(gateway string, p Programmed) {
	for i := range r.Gateways {
		gs := &r.Gateways[i]
		if gs.Gateway != gateway {
			continue
		}
		gs.Addresses = slices.Clone(p.Addresses)
		gen := gs.Generation
		if f := p.Credentials; f != nil {
			r.Notices = append(r.Notices, Notice{Ref: gs.Ref, Type: "Warning", Reason: f.Reason, Message: p.Message})
		}
		if a := findCondition(gs.Conditions, string(gwv1.GatewayConditionAccepted)); a == nil || a.Status != metav1.ConditionTrue {
			continue // a Gateway translation rejected stays unprogrammed
		}
		if c := findCondition(gs.Conditions, string(gwv1.GatewayConditionProgrammed)); c != nil && c.Reason != string(gwv1.GatewayReasonInvalid) {
			*c = programmedCond(gen, p, string(gwv1.GatewayReasonProgrammed), "Gateway is programmed")
		}
		for j := range gs.Listeners {
			ls := &gs.Listeners[j]
			if c := findCondition(ls.Conditions, string(gwv1.ListenerConditionProgrammed)); c != nil && c.Reason != string(gwv1.ListenerReasonInvalid) {
				*c = programmedCond(gen, p, string(gwv1.ListenerReasonProgrammed), "Listener is programmed")
			}
		}
	}
	for i := range r.ListenerSets {
		st := &r.ListenerSets[i]
		if st.Gateway != gateway {
			continue
		}
		gen := st.Generation
		// Only what translation left Pending waits for the dataplane; rejections keep their reason.
		pending := string(gwv1.ListenerSetReasonPending)
		if c := findCondition(st.Conditions, string(gwv1.ListenerSetConditionProgrammed)); c != nil && c.Reason == pending {
			*c = programmedCond(gen, p, string(gwv1.ListenerSetReasonProgrammed), "ListenerSet is programmed")
		}
		for j := range st.Listeners {
			if c := findCondition(st.Listeners[j].Conditions, string(gwv1.ListenerConditionProgrammed)); c != nil && c.Reason == pending {
				*c = programmedCond(gen, p, string(gwv1.ListenerReasonProgrammed), "Listener is programmed")
			}
		}
	}
}

func programmedCond(gen int64, p Programmed, okReason, okMsg string) metav1.Condition {
	if p.Ready {
		return cond(string(gwv1.GatewayConditionProgrammed), true, okReason, okMsg, gen)
	}
	reason := cmp.Or(p.Reason, string(gwv1.GatewayReasonPending))
	msg := cmp.Or(p.Message, "Waiting for the load balancer and the proxies")
	return cond(string(gwv1.GatewayConditionProgrammed), false, reason, msg, gen)
}

// cond builds a condition. LastTransitionTime is left zero: translation has no clock, and the
// status writer stamps it when the status actually changes (meta.SetStatusCondition does).
func cond(typ string, ok bool, reason, msg string, gen int64) metav1.Condition {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen}
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// Applied returns a copy of the statuses that SetProgrammed, SetCloudAccount and
// SetLoadBalancerStatus change (GatewayClasses, Gateways, ListenerSets, Ingresses, Services, and
// the Notices they add to), deep enough that changing the copy leaves r untouched, so that a later
// delivery change can be merged into the translation's own verdicts again.
func (r *Result) Applied() *Result {
	out := &Result{
		GatewayClasses: slices.Clone(r.GatewayClasses),
		Gateways:       slices.Clone(r.Gateways),
		ListenerSets:   slices.Clone(r.ListenerSets),
		Ingresses:      slices.Clone(r.Ingresses),
		Services:       slices.Clone(r.Services),
		Notices:        slices.Clone(r.Notices),
	}
	for i := range out.GatewayClasses {
		out.GatewayClasses[i].Conditions = slices.Clone(out.GatewayClasses[i].Conditions)
	}
	for i := range out.Gateways {
		gs := &out.Gateways[i]
		gs.Conditions = slices.Clone(gs.Conditions)
		gs.Listeners = slices.Clone(gs.Listeners)
		for j := range gs.Listeners {
			gs.Listeners[j].Conditions = slices.Clone(gs.Listeners[j].Conditions)
		}
	}
	for i := range out.ListenerSets {
		st := &out.ListenerSets[i]
		st.Conditions = slices.Clone(st.Conditions)
		st.Listeners = slices.Clone(st.Listeners)
		for j := range st.Listeners {
			st.Listeners[j].Conditions = slices.Clone(st.Listeners[j].Conditions)
		}
	}
	return out
}
