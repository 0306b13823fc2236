package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/providers"
)

// holdings is what the release of a member needs of the provisioning engine.
type holdings interface {
	// Holding names the gateways for which a provider may still hold resources in a cluster.
	Holding(cluster string) []string
	// Swept tells that the orphan sweep after the first translation cleaned up.
	Swept() bool
}

// memberRelease tells the MemberCluster reconciler (fleet.Releaser) what fleetgate still holds
// for a leaving member. It only looks: the pipeline reads the member as present but empty, so the
// usual paths release it all — the engine deletes the load balancers of gateways only the member
// held, the DNS publisher their records, the finalizers the member objects' finalizers and the
// status writer fleetgate's statuses on them. It nudges the last two, which look at a cluster
// only on news.
type memberRelease struct {
	// engine is nil when nothing provisions (no Dataplane).
	engine holdings
	// dns reads the hub's DNSEndpoints; nil when DNS publication is off.
	dns        client.Reader
	writer     *StatusWriter
	finalizers *finalizers
}

// Held implements fleet.Releaser.
func (m *memberRelease) Held(ctx context.Context, member string, usable bool) (hub, inMember []string, err error) {
	if m.engine != nil {
		if !m.engine.Swept() {
			hub = append(hub, "the providers' first orphan sweep")
		}
		for _, gw := range m.engine.Holding(member) {
			hub = append(hub, "load balancer of gateway "+gw)
		}
	}
	if m.dns != nil {
		keys, err := m.dnsOwners(ctx, member)
		if err != nil {
			return nil, nil, err
		}
		for _, k := range keys {
			hub = append(hub, "DNS records of gateway "+k)
		}
	}
	if !usable {
		return hub, nil, nil
	}
	target, connected := m.writer.targetOf(member)
	if !connected {
		return hub, []string{"the status writer's connection to the member"}, nil
	}
	inMember, err = m.inMember(ctx, member, target.Reader)
	return hub, inMember, err
}

// dnsOwners are the gateway keys of fleetgate's DNSEndpoints whose objects are all in member: the
// owners the publisher deletes once a pass read the member as empty.
func (m *memberRelease) dnsOwners(ctx context.Context, member string) ([]string, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(dnsv1a1.GroupVersion.WithKind("DNSEndpointList"))
	err := m.dns.List(ctx, &list, client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy})
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || isMissingKind(err) {
		return nil, nil // no CRD, no records
	}
	if err != nil {
		return nil, fmt.Errorf("listing DNSEndpoints: %w", err)
	}
	var out []string
	for _, o := range list.Items {
		if o.Annotations[annotationDNSClusters] == member {
			out = append(out, o.Annotations[providers.AnnotationGateway])
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// inMember lists what fleetgate left on a usable member's objects, read through r (its cache):
// finalizers on the objects that own load balancers, and fleetgate's statuses on routes,
// policies and the Gateways of its classes. The statuses it finds are queued for the writer to
// release, and finalizers have the finalizers look again.
func (m *memberRelease) inMember(ctx context.Context, member string, r client.Reader) ([]string, error) {
	var out []string
	fins := false
	for _, kind := range loadBalancerKinds() {
		probe, err := objectOf(kind)
		if err != nil {
			return nil, err
		}
		objs, err := listObjects(ctx, r, probe)
		if err != nil {
			return nil, fmt.Errorf("listing %ss in cluster %s: %w", kind, member, err)
		}
		for _, o := range objs {
			if controllerutil.ContainsFinalizer(o, v1alpha1.FinalizerLoadBalancer) {
				out = append(out, fmt.Sprintf("finalizer of %s %s/%s", kind, o.GetNamespace(), o.GetName()))
				fins = true
			}
		}
	}
	if fins {
		m.finalizers.poke()
	}
	ours, err := ourClasses(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", member, err)
	}
	var statuses []translate.ObjectRef
	for _, k := range m.writer.kinds {
		if k.status == nil {
			continue
		}
		held := k.status.ours
		// A Gateway's or ListenerSet's status names no controller: the Gateway's class does.
		switch k.name {
		case "Gateway":
			held = func(o client.Object) bool {
				gw, ok := o.(*gwv1.Gateway)
				return ok && ours[string(gw.Spec.GatewayClassName)] && !releasedGateway(gw)
			}
		case "ListenerSet":
			held = func(o client.Object) bool {
				ls, ok := o.(*gwv1.ListenerSet)
				return ok && (len(ls.Status.Listeners) > 0 || !pendingOnly(ls.Status.Conditions)) && ourParent(ctx, r, ls, ours)
			}
		// Nor does an Ingress's or a LoadBalancer Service's: their class does. An operator that
		// started after the cluster began leaving knows their addresses from here only.
		case "Ingress":
			var classes networkingv1.IngressClassList
			if err := r.List(ctx, &classes); err != nil && !meta.IsNoMatchError(err) && !isMissingKind(err) {
				return nil, fmt.Errorf("listing IngressClasses in cluster %s: %w", member, err)
			}
			held = func(o client.Object) bool {
				ing, ok := o.(*networkingv1.Ingress)
				return ok && len(ing.Status.LoadBalancer.Ingress) > 0 && translate.IngressOfOurs(classes.Items, ing)
			}
		case "Service":
			held = func(o client.Object) bool {
				svc, ok := o.(*corev1.Service)
				return ok && len(svc.Status.LoadBalancer.Ingress) > 0 && svc.Spec.LoadBalancerClass != nil &&
					translate.LoadBalancerClassOfOurs(*svc.Spec.LoadBalancerClass)
			}
		}
		if held == nil {
			continue
		}
		objs, err := k.list(ctx, ClusterReader{Cluster: member, Reader: r})
		if meta.IsNoMatchError(err) || isMissingKind(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s in cluster %s: %w", k.name, member, err)
		}
		for _, o := range objs {
			if held(o) {
				statuses = append(statuses, refOf(member, k.name, o))
			}
		}
	}
	slices.SortFunc(statuses, func(a, b translate.ObjectRef) int {
		return strings.Compare(a.Kind+"/"+a.Namespace+"/"+a.Name, b.Kind+"/"+b.Namespace+"/"+b.Name)
	})
	for _, ref := range statuses {
		out = append(out, fmt.Sprintf("status of %s %s/%s", ref.Kind, ref.Namespace, ref.Name))
	}
	m.writer.release(statuses)
	return out, nil
}

// ourClasses are the names of the cluster's GatewayClasses of fleetgate's controller.
func ourClasses(ctx context.Context, r client.Reader) (map[string]bool, error) {
	var list gwv1.GatewayClassList
	if err := r.List(ctx, &list); err != nil && !meta.IsNoMatchError(err) && !isMissingKind(err) {
		return nil, fmt.Errorf("listing GatewayClasses: %w", err)
	}
	out := map[string]bool{}
	for _, c := range list.Items {
		if c.Spec.ControllerName == v1alpha1.ControllerName {
			out[c.Name] = true
		}
	}
	return out, nil
}

// releasedGateway tells whether a Gateway's status is what the Gateway status kind's released
// writes: no addresses, no listeners, and only conditions still Unknown/Pending.
func releasedGateway(gw *gwv1.Gateway) bool {
	return len(gw.Status.Addresses) == 0 && len(gw.Status.Listeners) == 0 && pendingOnly(gw.Status.Conditions)
}

// pendingOnly tells whether every condition is still Unknown/Pending, as the CRDs default them.
func pendingOnly(conds []metav1.Condition) bool {
	return !slices.ContainsFunc(conds, func(c metav1.Condition) bool {
		return c.Status != metav1.ConditionUnknown || c.Reason != string(gwv1.GatewayReasonPending)
	})
}

// ourParent tells whether a ListenerSet's parent Gateway is of one of the classes ours names.
func ourParent(ctx context.Context, r client.Reader, ls *gwv1.ListenerSet, ours map[string]bool) bool {
	ns := ls.Namespace
	if p := ls.Spec.ParentRef.Namespace; p != nil {
		ns = string(*p)
	}
	var gw gwv1.Gateway
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: string(ls.Spec.ParentRef.Name)}, &gw); err != nil {
		return false // without its parent it is no longer known to be ours
	}
	return ours[string(gw.Spec.GatewayClassName)]
}
