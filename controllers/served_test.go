package controllers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/controllers/translate"
)

func TestKeepServed(t *testing.T) {
	ref := translate.ObjectRef{Cluster: "hub", Kind: "Ingress", Namespace: "apps", Name: "web"}
	addr := func(ip string) []gwv1.GatewayStatusAddress {
		return []gwv1.GatewayStatusAddress{{Type: ptr.To(gwv1.IPAddressType), Value: ip}}
	}
	lb := func(ip string) networkingv1.IngressLoadBalancerStatus {
		return networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: ip}}}
	}
	servedAt := func(gw, ip string) map[translate.ObjectRef]servedStatus {
		return map[translate.ObjectRef]servedStatus{ref: {gateway: gw, addresses: addr(ip), ingress: lb(ip)}}
	}
	pending := translate.Programmed{Reason: string(gwv1.GatewayReasonPending), Addresses: addr("10.0.0.1")}
	tests := []struct {
		name       string
		gateway    string // the Ingress's gateway in this pass; "" leaves it out of the result
		translated networkingv1.IngressLoadBalancerStatus
		programmed translate.Programmed
		served     map[translate.ObjectRef]servedStatus
		want       networkingv1.IngressLoadBalancerStatus
		wantServed map[translate.ObjectRef]servedStatus
	}{{
		name: "programmed: served from now on", gateway: "gw", translated: lb("10.0.0.1"),
		programmed: translate.Programmed{Ready: true, Addresses: addr("10.0.0.1")},
		want:       lb("10.0.0.1"), wantServed: servedAt("gw", "10.0.0.1"),
	}, {
		name: "pending after it was served: keeps its address", gateway: "gw", programmed: pending,
		served: servedAt("gw", "10.0.0.1"), want: lb("10.0.0.1"), wantServed: servedAt("gw", "10.0.0.1"),
	}, {
		name: "pending, never served: waits for the proxies", gateway: "gw", programmed: pending,
		want: networkingv1.IngressLoadBalancerStatus{}, wantServed: map[translate.ObjectRef]servedStatus{},
	}, {
		name: "provider error without addresses: keeps its address", gateway: "gw",
		programmed: translate.Programmed{Reason: string(gwv1.GatewayReasonPending), Message: "provider error: timeout"},
		served:     servedAt("gw", "10.0.0.1"), want: lb("10.0.0.1"), wantServed: servedAt("gw", "10.0.0.1"),
	}, {
		name: "pending at another address: withdrawn", gateway: "gw",
		programmed: translate.Programmed{Reason: string(gwv1.GatewayReasonPending), Addresses: addr("10.0.0.2")},
		served:     servedAt("gw", "10.0.0.1"), want: networkingv1.IngressLoadBalancerStatus{}, wantServed: map[translate.ObjectRef]servedStatus{},
	}, {
		name: "refused by the proxies: withdrawn", gateway: "gw",
		programmed: translate.Programmed{Reason: string(gwv1.GatewayReasonInvalid), Addresses: addr("10.0.0.1")},
		served:     servedAt("gw", "10.0.0.1"), want: networkingv1.IngressLoadBalancerStatus{}, wantServed: map[translate.ObjectRef]servedStatus{},
	}, {
		name: "moved to another class's gateway: waits for it", gateway: "other", programmed: pending,
		served: servedAt("gw", "10.0.0.1"), want: networkingv1.IngressLoadBalancerStatus{}, wantServed: map[translate.ObjectRef]servedStatus{},
	}, {
		name: "gone from the result: forgotten", programmed: pending,
		served: servedAt("gw", "10.0.0.1"), wantServed: map[translate.ObjectRef]servedStatus{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &translate.Result{}
			if tt.gateway != "" {
				res.Ingresses = []translate.IngressStatus{{Ref: ref, Gateway: tt.gateway, LoadBalancer: tt.translated}}
			}
			served := tt.served
			if served == nil {
				served = map[translate.ObjectRef]servedStatus{}
			}
			keepServed(res, map[string]translate.Programmed{tt.gateway: tt.programmed}, served)
			if tt.gateway != "" {
				if diff := cmp.Diff(tt.want, res.Ingresses[0].LoadBalancer); diff != "" {
					t.Errorf("status.loadBalancer (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tt.wantServed, served, cmp.AllowUnexported(servedStatus{})); diff != "" {
				t.Errorf("served (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeepServedService: a LoadBalancer Service keeps its status.loadBalancer the same way.
func TestKeepServedService(t *testing.T) {
	ref := translate.ObjectRef{Cluster: "hub", Kind: "Service", Namespace: "apps", Name: "db"}
	addr := []gwv1.GatewayStatusAddress{{Value: "10.0.0.1"}}
	lb := corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}}
	served := map[translate.ObjectRef]servedStatus{}
	steps := []struct {
		name       string
		programmed translate.Programmed
		translated corev1.LoadBalancerStatus
		want       corev1.LoadBalancerStatus
	}{
		{name: "pending, never served", programmed: translate.Programmed{Reason: "Pending", Addresses: addr}},
		{name: "programmed", programmed: translate.Programmed{Ready: true, Addresses: addr}, translated: lb, want: lb},
		{name: "pending again", programmed: translate.Programmed{Reason: "Pending", Addresses: addr}, want: lb},
		{name: "no resources", programmed: translate.Programmed{Reason: "NoResources"}},
		{name: "pending after it was withdrawn", programmed: translate.Programmed{Reason: "Pending", Addresses: addr}},
	}
	for _, st := range steps {
		res := &translate.Result{Services: []translate.ServiceStatus{{Ref: ref, Gateway: "svc", LoadBalancer: st.translated}}}
		keepServed(res, map[string]translate.Programmed{"svc": st.programmed}, served)
		if diff := cmp.Diff(st.want, res.Services[0].LoadBalancer); diff != "" {
			t.Errorf("%s: status.loadBalancer (-want +got):\n%s", st.name, diff)
		}
	}
}
