package incluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/incluster"
	"github.com/fleetgate/fleetgate/providers/providertest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

const (
	clusterName = "member"
	// otherCluster is a second member, for fleet gateways; only the fleet test uses it.
	otherCluster = "other"
	namespace    = "providertest"
	gatewayUID   = "6f1f6c2e-0000-4000-8000-000000000001"
)

// env is one API server shared by every subtest, with a client that counts writes.
type env struct {
	admin     client.Client // the test's own client; its writes are not counted
	counting  client.Client // what providers get
	other     client.Client // otherCluster's client
	ca        *testCA
	mutations atomic.Int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clusters := testbed.ForTest(t, clusterName, otherCluster)
	c := clusters[0]
	wc, err := client.NewWithWatch(c.Config, client.Options{Scheme: c.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{admin: c.Client, other: clusters[1].Client, ca: newTestCA(t)}
	e.counting = providertest.CountingClient(wc, &e.mutations)
	for _, c := range clusters {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		if err := c.Client.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *env) provider(t *testing.T) *incluster.Provider {
	t.Helper()
	p, err := incluster.New(incluster.Options{
		Client: func(cluster string) (client.Client, error) {
			switch cluster {
			case clusterName:
				return e.counting, nil
			case otherCluster:
				return e.other, nil
			}
			return nil, fmt.Errorf("no cluster %q", cluster)
		},
		Clusters:    func() []string { return []string{clusterName, otherCluster} },
		Image:       "ghcr.io/fleetgate/fleetgate:test",
		XDSAddress:  "fleetgate.fleetgate-system.svc:18000",
		Credentials: e.ca.issue,
		CA:          func() []byte { return e.ca.pem },
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func model(name string) *providers.LoadBalancer {
	return &providers.LoadBalancer{
		Gateway: clusterName + "/" + namespace + "/" + name, Namespace: namespace, Name: name,
		Class: "fleetgate", Provider: incluster.Name, Scope: "Cluster",
		Clusters: []string{clusterName},
		Ports: []providers.Port{
			{Port: 53, Transport: providers.TransportUDP, Protocol: "UDP"},
			{Port: 80, Transport: providers.TransportTCP, Protocol: "HTTP"},
		},
		Labels:      map[string]string{"team": "edge"},
		Annotations: map[string]string{"example.com/owner": "edge-team"},
		GatewayUIDs: map[string]string{clusterName: gatewayUID},
	}
}

// owned lists every object with fleetgate's ownership label, id → resourceVersion.
func (e *env) owned(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, kind := range []string{"Deployment", "Service", "ServiceAccount", "Secret"} {
		var l metav1.PartialObjectMetadataList
		gv := corev1.SchemeGroupVersion
		if kind == "Deployment" {
			gv = appsv1.SchemeGroupVersion
		}
		l.SetGroupVersionKind(gv.WithKind(kind + "List"))
		if err := e.admin.List(ctx, &l, client.MatchingLabels{providers.LabelManagedBy: providers.ManagedBy}); err != nil {
			return nil, err
		}
		for _, o := range l.Items {
			out[kind+"/"+o.Namespace+"/"+o.Name] = o.ResourceVersion
		}
	}
	return out, nil
}

// settle does what the Deployment controller, kubelets and a cloud controller would: make the
// replicas available and give a LoadBalancer Service an ingress IP.
func (e *env) settle(ctx context.Context, lb *providers.LoadBalancer) error {
	key := client.ObjectKey{Namespace: lb.Namespace, Name: incluster.ObjectName(lb)}
	dep := &appsv1.Deployment{}
	if err := e.admin.Get(ctx, key, dep); err != nil {
		return err
	}
	n := *dep.Spec.Replicas
	dep.Status = appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
	}
	if err := e.admin.Status().Update(ctx, dep); err != nil {
		return err
	}
	svc := &corev1.Service{}
	if err := e.admin.Get(ctx, key, svc); err != nil {
		return err
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil
	}
	ip := svc.Spec.LoadBalancerIP
	if ip == "" {
		h := fnv.New32a()
		h.Write([]byte(lb.Gateway))
		ip = fmt.Sprintf("192.0.2.%d", h.Sum32()%250+1)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	return e.admin.Status().Update(ctx, svc)
}

func (e *env) observe(ctx context.Context, lb *providers.LoadBalancer) (providertest.Observed, error) {
	svc := &corev1.Service{}
	if err := e.admin.Get(ctx, client.ObjectKey{Namespace: lb.Namespace, Name: incluster.ObjectName(lb)}, svc); err != nil {
		return providertest.Observed{}, err
	}
	o := providertest.Observed{Labels: svc.Labels}
	for _, p := range svc.Spec.Ports {
		o.Ports = append(o.Ports, providers.Port{Port: p.Port, Transport: providers.Transport(p.Protocol)})
	}
	return o, nil
}

func TestProvider(t *testing.T) {
	e := newEnv(t)

	t.Run("Suite", func(t *testing.T) {
		providertest.Run(t, providertest.Harness{
			New:       func(t *testing.T) providers.Provider { return e.provider(t) },
			Model:     model,
			Owned:     e.owned,
			Settle:    e.settle,
			Observe:   e.observe,
			Mutations: func() int { return int(e.mutations.Load()) },
			ValidParameters: []json.RawMessage{nil, json.RawMessage("null"), json.RawMessage("{}"),
				incluster.InClusterParams(3, "ClusterIP"), incluster.InClusterParams(100, "NodePort")},
			InvalidParameters: []json.RawMessage{json.RawMessage(`{"replicas":0}`), json.RawMessage(`{"serviceType":"ExternalName"}`),
				json.RawMessage(`{"replica":2}`), json.RawMessage(`{"replicas":"two"}`), json.RawMessage(`[`)},
		})
	})

	t.Run("ObjectsAreOwnedAndLabelled", func(t *testing.T) {
		ctx := t.Context()
		p, lb := e.provider(t), model("owned")
		lb.Parameters = incluster.InClusterParams(3, "ClusterIP")
		t.Cleanup(func() { _ = p.Delete(context.WithoutCancel(ctx), lb) })
		if _, err := p.Ensure(ctx, lb); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKey{Namespace: namespace, Name: incluster.ObjectName(lb)}
		dep, svc, sa := &appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}
		for _, o := range []client.Object{dep, svc, sa} {
			if err := e.admin.Get(ctx, key, o); err != nil {
				t.Fatal(err)
			}
			if got := o.GetLabels()["team"]; got != "edge" {
				t.Errorf("%T label team=%q, want edge", o, got)
			}
			if got := o.GetAnnotations()["example.com/owner"]; got != "edge-team" {
				t.Errorf("%T annotation example.com/owner=%q, want edge-team", o, got)
			}
			want := []metav1.OwnerReference{{
				APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: "owned",
				UID: gatewayUID, Controller: ptr.To(true),
			}}
			if d := cmp.Diff(want, o.GetOwnerReferences()); d != "" {
				t.Errorf("%T owner references (-want +got):\n%s", o, d)
			}
		}
		if *dep.Spec.Replicas != 3 {
			t.Errorf("replicas %d, want 3", *dep.Spec.Replicas)
		}
		if got := dep.Spec.Template.Labels["team"]; got != "edge" {
			t.Errorf("pod label team=%q, want edge", got)
		}
		if svc.Spec.Type != corev1.ServiceTypeClusterIP {
			t.Errorf("Service type %s, want ClusterIP", svc.Spec.Type)
		}
	})

	t.Run("ServiceTypesAndAddresses", func(t *testing.T) {
		tests := []struct {
			name      string
			params    json.RawMessage
			addresses []providers.Address
			settle    bool
			want      providers.Status
		}{{
			name:   "loadbalancer-without-ingress",
			want:   providers.Status{Reason: providers.ReasonAddressNotAssigned},
			settle: false,
		}, {
			name:      "loadbalancer-requested-ip",
			addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "198.51.100.7"}},
			settle:    true,
			want: providers.Status{Ready: true, Reason: providers.ReasonProgrammed,
				Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "198.51.100.7"}}},
		}, {
			name:      "hostname-unsupported",
			addresses: []providers.Address{{Type: providers.AddressTypeHostname, Value: "gw.example.com"}},
			settle:    true,
			// The Service still gets an address; the Gateway is told the hostname cannot be had.
			want: providers.Status{Reason: providers.ReasonUnsupportedAddress,
				Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "192.0.2.222"}}},
		}, {
			name:   "nodeport-has-no-address",
			params: incluster.InClusterParams(0, "NodePort"),
			settle: true,
			want:   providers.Status{Reason: providers.ReasonAddressNotAssigned},
		}, {
			name:      "nodeport-external-ip",
			params:    incluster.InClusterParams(0, "NodePort"),
			addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "203.0.113.9"}},
			settle:    true,
			want: providers.Status{Ready: true, Reason: providers.ReasonProgrammed,
				Addresses: []providers.Address{{Type: providers.AddressTypeIPAddress, Value: "203.0.113.9"}}},
		}, {
			name:   "clusterip-pending-replicas",
			params: incluster.InClusterParams(1, "ClusterIP"),
			want:   providers.Status{Reason: providers.ReasonPending},
		}}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ctx := t.Context()
				p, lb := e.provider(t), model(tt.name)
				lb.Parameters, lb.Addresses = tt.params, tt.addresses
				t.Cleanup(func() { _ = p.Delete(context.WithoutCancel(ctx), lb) })
				if _, err := p.Ensure(ctx, lb); err != nil {
					t.Fatal(err)
				}
				if tt.settle {
					if err := e.settle(ctx, lb); err != nil {
						t.Fatal(err)
					}
				}
				got, err := p.Ensure(ctx, lb)
				if err != nil {
					t.Fatal(err)
				}
				got.Message = ""
				if tt.name == "clusterip-pending-replicas" && len(got.Addresses) == 1 {
					got.Addresses = nil // the cluster IP the server allocated
				}
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("status (-want +got):\n%s", d)
				}
			})
		}
	})

	t.Run("FleetGatewayInTwoClusters", func(t *testing.T) {
		ctx := t.Context()
		p, lb := e.provider(t), model("fleet")
		lb.Gateway = namespace + "/fleet" // a fleet gateway's key has no cluster
		lb.Clusters = []string{clusterName, otherCluster}
		lb.Parameters = incluster.InClusterParams(0, "ClusterIP")
		t.Cleanup(func() { _ = p.Delete(context.WithoutCancel(ctx), lb) })
		st, err := p.Ensure(ctx, lb)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Addresses) != 2 {
			t.Errorf("addresses %v, want one cluster IP per cluster", st.Addresses)
		}
		if st.Ready || st.Reason != providers.ReasonPending {
			t.Errorf("status %+v, want Pending until both clusters have replicas", st)
		}
		key := client.ObjectKey{Namespace: namespace, Name: incluster.ObjectName(lb)}
		if err := e.other.Get(ctx, key, &appsv1.Deployment{}); err != nil {
			t.Fatalf("no proxy in the second cluster: %v", err)
		}
		// Only the second cluster leaves the fleet: Delete with just that cluster.
		gone := *lb
		gone.Clusters = []string{otherCluster}
		if err := p.Delete(ctx, &gone); err != nil {
			t.Fatal(err)
		}
		var left corev1.ServiceList
		if err := e.other.List(ctx, &left, client.MatchingLabels(providers.OwnerSelector(lb.Gateway))); err != nil {
			t.Fatal(err)
		}
		if len(left.Items) != 0 {
			t.Errorf("Services left in %s: %d", otherCluster, len(left.Items))
		}
		if err := e.admin.Get(ctx, key, &appsv1.Deployment{}); err != nil {
			t.Errorf("proxy in %s went too: %v", clusterName, err)
		}
		listed, err := p.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []providers.LoadBalancer{{Gateway: lb.Gateway, Namespace: namespace, Name: "fleet", Provider: incluster.Name, Clusters: []string{clusterName}}}
		if d := cmp.Diff(want, listed); d != "" {
			t.Errorf("List after the gateway left %s (-want +got):\n%s", otherCluster, d)
		}
	})

	t.Run("ListReportsAnUnreachableCluster", func(t *testing.T) {
		ctx := t.Context()
		p, lb := e.provider(t), model("unreachable")
		t.Cleanup(func() { _ = p.Delete(context.WithoutCancel(ctx), lb) })
		if _, err := p.Ensure(ctx, lb); err != nil {
			t.Fatal(err)
		}
		lister, err := incluster.New(incluster.Options{
			Client: func(cluster string) (client.Client, error) {
				if cluster == clusterName {
					return e.admin, nil
				}
				return nil, fmt.Errorf("cluster %s is unreachable", cluster)
			},
			Clusters: func() []string { return []string{"gone", clusterName} },
			Image:    "ghcr.io/fleetgate/fleetgate:test",
		})
		if err != nil {
			t.Fatal(err)
		}
		listed, err := lister.List(ctx)
		if err == nil || !strings.Contains(err.Error(), "cluster gone is unreachable") {
			t.Errorf("List error = %v, want the unreachable cluster's", err)
		}
		want := []providers.LoadBalancer{{Gateway: lb.Gateway, Namespace: namespace, Name: "unreachable", Provider: incluster.Name, Clusters: []string{clusterName}}}
		if d := cmp.Diff(want, listed); d != "" {
			t.Errorf("List with one cluster unreachable (-want +got):\n%s", d)
		}
	})

	t.Run("DriftIsRepaired", func(t *testing.T) {
		ctx := t.Context()
		p, lb := e.provider(t), model("drift")
		t.Cleanup(func() { _ = p.Delete(context.WithoutCancel(ctx), lb) })
		if _, err := p.Ensure(ctx, lb); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKey{Namespace: namespace, Name: incluster.ObjectName(lb)}
		// Someone else scales the proxy and relabels the Service.
		dep := &appsv1.Deployment{}
		if err := e.admin.Get(ctx, key, dep); err != nil {
			t.Fatal(err)
		}
		dep.Spec.Replicas = ptr.To(int32(7))
		if err := e.admin.Update(ctx, dep); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{}
		if err := e.admin.Get(ctx, key, svc); err != nil {
			t.Fatal(err)
		}
		svc.Labels["team"] = "someone-else"
		if err := e.admin.Update(ctx, svc); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Ensure(ctx, lb); err != nil {
			t.Fatal(err)
		}
		if err := e.admin.Get(ctx, key, dep); err != nil {
			t.Fatal(err)
		}
		if err := e.admin.Get(ctx, key, svc); err != nil {
			t.Fatal(err)
		}
		if *dep.Spec.Replicas != incluster.DefaultReplicas || svc.Labels["team"] != "edge" {
			t.Errorf("after Ensure: replicas %d, label team=%q; want %d, edge", *dep.Spec.Replicas, svc.Labels["team"], incluster.DefaultReplicas)
		}
	})

	t.Run("ServiceTypeChange", func(t *testing.T) {
		ctx := t.Context()
		p, lb := e.provider(t), model("retype")
		t.Cleanup(func() { _ = p.Delete(context.WithoutCancel(ctx), lb) })
		for _, st := range []string{"LoadBalancer", "ClusterIP", "NodePort", "LoadBalancer"} {
			lb.Parameters = incluster.InClusterParams(0, st)
			if _, err := p.Ensure(ctx, lb); err != nil {
				t.Fatalf("to %s: %v", st, err)
			}
			svc := &corev1.Service{}
			if err := e.admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: incluster.ObjectName(lb)}, svc); err != nil {
				t.Fatal(err)
			}
			if string(svc.Spec.Type) != st {
				t.Errorf("Service type %s, want %s", svc.Spec.Type, st)
			}
		}
	})
}
