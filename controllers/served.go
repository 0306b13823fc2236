package controllers

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

// servedStatus is the status.loadBalancer an Ingress or LoadBalancer Service was last given while
// its gateway was programmed.
type servedStatus struct {
	gateway   string
	addresses []gwv1.GatewayStatusAddress
	ingress   networkingv1.IngressLoadBalancerStatus
	service   corev1.LoadBalancerStatus
}

// keepServed gives back to every Ingress and LoadBalancer Service the status.loadBalancer it had,
// while its gateway only waits for its proxies: translation withdraws the addresses until the
// gateway is programmed, and a gateway of Ingresses or Services, having no Gateway generation to
// wait for, waits for the proxies to ACK every new config. Any change to what the shared proxy
// serves (an Ingress created in another namespace, a Secret, an EndpointSlice growing) would
// otherwise withdraw every other Ingress's address until the ACK. An object new to its gateway
// still gets its address only once the proxies serve it; a gateway that is not merely pending
// (refused, without resources, or with other addresses) withdraws it. served is updated; entries
// of objects no longer in res go.
func keepServed(res *translate.Result, programmed map[string]translate.Programmed, served map[translate.ObjectRef]servedStatus) {
	seen := make(map[translate.ObjectRef]bool, len(res.Ingresses)+len(res.Services))
	for i := range res.Ingresses {
		st := &res.Ingresses[i]
		seen[st.Ref] = true
		p := programmed[st.Gateway]
		if p.Ready {
			served[st.Ref] = servedStatus{gateway: st.Gateway, addresses: p.Addresses, ingress: st.LoadBalancer}
			continue
		}
		if prev, ok := served[st.Ref]; ok && stillServed(prev, st.Gateway, p) {
			st.LoadBalancer = prev.ingress
			continue
		}
		delete(served, st.Ref)
	}
	for i := range res.Services {
		st := &res.Services[i]
		seen[st.Ref] = true
		p := programmed[st.Gateway]
		if p.Ready {
			served[st.Ref] = servedStatus{gateway: st.Gateway, addresses: p.Addresses, service: st.LoadBalancer}
			continue
		}
		if prev, ok := served[st.Ref]; ok && stillServed(prev, st.Gateway, p) {
			st.LoadBalancer = prev.service
			continue
		}
		delete(served, st.Ref)
	}
	for ref := range served {
		if !seen[ref] {
			delete(served, ref)
		}
	}
}

// stillServed tells whether a gateway that is not programmed still serves what it served before:
// the same gateway, pending (a config on its way to the proxies, or a provider call that failed
// and tells nothing new), at the same addresses if it reports any.
func stillServed(prev servedStatus, gateway string, p translate.Programmed) bool {
	return prev.gateway == gateway && p.Reason == string(gwv1.GatewayReasonPending) &&
		(len(p.Addresses) == 0 || slices.EqualFunc(prev.addresses, p.Addresses, sameAddress))
}

func sameAddress(a, b gwv1.GatewayStatusAddress) bool {
	return a.Value == b.Value && ptr.Deref(a.Type, gwv1.IPAddressType) == ptr.Deref(b.Type, gwv1.IPAddressType)
}
