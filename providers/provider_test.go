package providers

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// labelValue is the syntax of a Kubernetes label value.
var labelValue = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

func TestGatewayID(t *testing.T) {
	keys := []string{"c1/ns/gw", "ns/gw", "c1/" + string(make([]byte, 300))}
	seen := map[string]string{}
	for _, k := range keys {
		id := GatewayID(k)
		if len(id) > 63 || !labelValue.MatchString(id) {
			t.Errorf("GatewayID(%q) = %q is not a label value", k, id)
		}
		if GatewayID(k) != id {
			t.Errorf("GatewayID(%q) is not stable", k)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("GatewayID(%q) = GatewayID(%q)", k, other)
		}
		seen[id] = k
	}
}

func TestResourceLabels(t *testing.T) {
	long := string(make([]byte, 64))
	tests := []struct {
		name string
		lb   LoadBalancer
		want map[string]string
	}{{
		name: "ownership-only",
		lb:   LoadBalancer{Gateway: "c/ns/gw", Namespace: "ns", Name: "gw"},
		want: map[string]string{
			LabelManagedBy: ManagedBy, LabelGateway: GatewayID("c/ns/gw"),
			LabelGatewayNamespace: "ns", LabelGatewayName: "gw", LabelGatewayAPIName: "gw",
		},
	}, {
		name: "infrastructure-cannot-override-ownership",
		lb: LoadBalancer{Gateway: "ns/gw", Namespace: "ns", Name: "gw",
			Labels: map[string]string{"team": "a", LabelManagedBy: "someone-else", LabelGateway: "x"}},
		want: map[string]string{
			"team": "a", LabelManagedBy: ManagedBy, LabelGateway: GatewayID("ns/gw"),
			LabelGatewayNamespace: "ns", LabelGatewayName: "gw", LabelGatewayAPIName: "gw",
		},
	}, {
		name: "name-too-long-for-a-label",
		lb:   LoadBalancer{Gateway: "ns/" + long, Namespace: "ns", Name: long},
		want: map[string]string{
			LabelManagedBy: ManagedBy, LabelGateway: GatewayID("ns/" + long), LabelGatewayNamespace: "ns",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			labels := tt.lb.Labels
			if d := cmp.Diff(tt.want, ResourceLabels(&tt.lb)); d != "" {
				t.Errorf("ResourceLabels (-want +got):\n%s", d)
			}
			if !cmp.Equal(labels, tt.lb.Labels) {
				t.Error("ResourceLabels changed the model's labels")
			}
		})
	}
}

func TestResourceAnnotations(t *testing.T) {
	lb := &LoadBalancer{Gateway: "c/ns/gw", Annotations: map[string]string{"a": "b"}}
	want := map[string]string{"a": "b", AnnotationGateway: "c/ns/gw"}
	if d := cmp.Diff(want, ResourceAnnotations(lb)); d != "" {
		t.Errorf("ResourceAnnotations (-want +got):\n%s", d)
	}
	if len(lb.Annotations) != 1 {
		t.Error("ResourceAnnotations changed the model's annotations")
	}
}

func TestSortAddresses(t *testing.T) {
	ip := func(v string) Address { return Address{Type: AddressTypeIPAddress, Value: v} }
	host := func(v string) Address { return Address{Type: AddressTypeHostname, Value: v} }
	tests := []struct {
		name     string
		in, want []Address
	}{
		{name: "empty"},
		{name: "sorted-by-type-then-value", in: []Address{ip("10.0.0.2"), host("b"), ip("10.0.0.1"), host("a")},
			want: []Address{host("a"), host("b"), ip("10.0.0.1"), ip("10.0.0.2")}},
		{name: "duplicates-dropped", in: []Address{ip("10.0.0.1"), ip("10.0.0.1")}, want: []Address{ip("10.0.0.1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, SortAddresses(tt.in)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

type fake struct{ name string }

func (fake) Ensure(context.Context, *LoadBalancer) (Status, error) { return Status{}, nil }
func (fake) Delete(context.Context, *LoadBalancer) error           { return nil }
func (fake) List(context.Context) ([]LoadBalancer, error)          { return nil, nil }
func (fake) Capabilities(json.RawMessage) (Capabilities, error) {
	return FullCapabilities(), nil
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	a, b := fake{"a"}, fake{"b"}
	r.Register("incluster", a)
	r.Register("aws", b)
	tests := []struct {
		name   string
		want   Provider
		wantOK bool
	}{{"incluster", a, true}, {"aws", b, true}, {"gcp", nil, false}}
	for _, tt := range tests {
		got, ok := r.Get(tt.name)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("Get(%q) = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
	if d := cmp.Diff([]string{"aws", "incluster"}, r.Names()); d != "" {
		t.Errorf("Names (-want +got):\n%s", d)
	}
	if _, ok := NewRegistry().Get("incluster"); ok {
		t.Error("registries share state")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	r.Register("aws", a)
}

func TestOwnerOf(t *testing.T) {
	long := "g" + strings.Repeat("x", 70)
	tests := []struct {
		name                string
		labels, annotations map[string]string
		wantKey, wantName   string
		wantOK              bool
	}{{
		name:        "gateway",
		labels:      OwnerLabels(&LoadBalancer{Gateway: "c/ns/web", Namespace: "ns", Name: "web"}),
		annotations: map[string]string{AnnotationGateway: "c/ns/web"},
		wantKey:     "c/ns/web", wantName: "web", wantOK: true,
	}, {
		name:        "ingress-name-is-not-in-the-key",
		labels:      OwnerLabels(&LoadBalancer{Gateway: "c/ingress:public", Namespace: "default", Name: "ingress-public"}),
		annotations: map[string]string{AnnotationGateway: "c/ingress:public"},
		wantKey:     "c/ingress:public", wantName: "ingress-public", wantOK: true,
	}, {
		name:        "long-name-from-the-key",
		labels:      OwnerLabels(&LoadBalancer{Gateway: "ns/" + long, Namespace: "ns", Name: long}),
		annotations: map[string]string{AnnotationGateway: "ns/" + long},
		wantKey:     "ns/" + long, wantName: long, wantOK: true,
	}, {
		name:   "no-key",
		labels: OwnerLabels(&LoadBalancer{Gateway: "c/ns/web", Namespace: "ns", Name: "web"}),
	}, {
		name:        "key-of-another-gateway",
		labels:      OwnerLabels(&LoadBalancer{Gateway: "c/ns/web", Namespace: "ns", Name: "web"}),
		annotations: map[string]string{AnnotationGateway: "c/ns/other"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, name, ok := OwnerOf(tt.labels, tt.annotations)
			if d := cmp.Diff([]any{tt.wantKey, tt.wantName, tt.wantOK}, []any{key, name, ok}); d != "" {
				t.Errorf("OwnerOf (-want +got):\n%s", d)
			}
		})
	}
}
