package translate

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestSetProgrammed(t *testing.T) {
	mk := func() *Result {
		return &Result{Gateways: []GatewayStatus{
			{Gateway: "hub/ns/ok", Generation: 3, Conditions: []metav1.Condition{
				cond("Accepted", true, "Accepted", "", 3), cond("Programmed", false, "Pending", "", 3)},
				Listeners: []gwv1.ListenerStatus{
					{Name: "good", Conditions: []metav1.Condition{cond("Programmed", false, "Pending", "", 3)}},
					{Name: "bad", Conditions: []metav1.Condition{cond("Programmed", false, "Invalid", "", 3)}},
				}},
			{Gateway: "hub/ns/rejected", Generation: 1, Conditions: []metav1.Condition{
				cond("Accepted", false, "InvalidParameters", "", 1), cond("Programmed", false, "Invalid", "", 1)}},
		}, ListenerSets: []ListenerSetStatus{
			{Gateway: "hub/ns/ok", Ref: ObjectRef{Name: "set"}, Generation: 2, Conditions: []metav1.Condition{
				cond("Accepted", true, "ListenersNotValid", "", 2), cond("Programmed", false, "Pending", "", 2)},
				Listeners: []gwv1.ListenerEntryStatus{
					{Name: "set-good", Conditions: []metav1.Condition{cond("Programmed", false, "Pending", "", 2)}},
					{Name: "set-conflicted", Conditions: []metav1.Condition{cond("Programmed", false, "HostnameConflict", "", 2)}},
				}},
			{Gateway: "hub/ns/ok", Ref: ObjectRef{Name: "not-allowed"}, Generation: 1, Conditions: []metav1.Condition{
				cond("Accepted", false, "NotAllowed", "", 1), cond("Programmed", false, "NotAllowed", "", 1)}},
		}}
	}
	reasons := func(r *Result) []string {
		var out []string
		for _, g := range r.Gateways {
			out = append(out, g.Gateway+":"+findCondition(g.Conditions, "Programmed").Reason)
			for _, l := range g.Listeners {
				out = append(out, string(l.Name)+":"+findCondition(l.Conditions, "Programmed").Reason)
			}
		}
		for _, s := range r.ListenerSets {
			out = append(out, s.Ref.Name+":"+findCondition(s.Conditions, "Programmed").Reason)
			for _, l := range s.Listeners {
				out = append(out, string(l.Name)+":"+findCondition(l.Conditions, "Programmed").Reason)
			}
		}
		return out
	}
	sets := func(set, good string) []string {
		return []string{"set:" + set, "set-good:" + good, "set-conflicted:HostnameConflict", "not-allowed:NotAllowed"}
	}
	for _, tc := range []struct {
		name string
		key  string
		p    Programmed
		want []string
	}{
		{"ready", "hub/ns/ok", Programmed{Ready: true}, append([]string{"hub/ns/ok:Programmed", "good:Programmed", "bad:Invalid", "hub/ns/rejected:Invalid"}, sets("Programmed", "Programmed")...)},
		{"not ready", "hub/ns/ok", Programmed{Reason: "NoResources"}, append([]string{"hub/ns/ok:NoResources", "good:NoResources", "bad:Invalid", "hub/ns/rejected:Invalid"}, sets("NoResources", "NoResources")...)},
		{"address not usable", "hub/ns/ok", Programmed{Reason: "AddressNotUsable"}, append([]string{"hub/ns/ok:AddressNotUsable", "good:AddressNotUsable", "bad:Invalid", "hub/ns/rejected:Invalid"}, sets("AddressNotUsable", "AddressNotUsable")...)},
		{"rejected stays invalid", "hub/ns/rejected", Programmed{Ready: true}, append([]string{"hub/ns/ok:Pending", "good:Pending", "bad:Invalid", "hub/ns/rejected:Invalid"}, sets("Pending", "Pending")...)},
		{"unknown key", "nope", Programmed{Ready: true}, append([]string{"hub/ns/ok:Pending", "good:Pending", "bad:Invalid", "hub/ns/rejected:Invalid"}, sets("Pending", "Pending")...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mk()
			r.SetProgrammed(tc.key, tc.p)
			r.SetProgrammed(tc.key, tc.p) // idempotent
			if diff := cmp.Diff(tc.want, reasons(r)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	r := mk()
	addr := []gwv1.GatewayStatusAddress{{Value: "192.0.2.1"}}
	r.SetProgrammed("hub/ns/ok", Programmed{Ready: true, Addresses: addr})
	if diff := cmp.Diff(addr, r.Gateways[0].Addresses, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if c := findCondition(r.Gateways[0].Conditions, "Programmed"); c.ObservedGeneration != 3 || c.Status != metav1.ConditionTrue {
		t.Errorf("programmed condition %+v", c)
	}
}

// Applied carries every status that apply completes, and its copy is deep enough that programming it
// leaves the translation untouched: the delivery pass publishes it as the whole "applied" part, so a
// kind left out would have its status cleared by the writer.
func TestAppliedCopy(t *testing.T) {
	fx := readFixtures(t)
	s := loadVersioned(t, filepath.Join("testdata", "listenerset-routes.in.yaml"), fx)
	res := Translate(s)
	if len(res.Gateways) == 0 || len(res.ListenerSets) == 0 {
		t.Fatal("the input has no Gateways or ListenerSets")
	}
	before := render(t, res, fx)
	cp := res.Applied()
	if diff := cmp.Diff(res.Gateways, cp.Gateways); diff != "" {
		t.Errorf("Gateways (-translation +Applied):\n%s", diff)
	}
	if diff := cmp.Diff(res.ListenerSets, cp.ListenerSets); diff != "" {
		t.Errorf("ListenerSets (-translation +Applied):\n%s", diff)
	}
	if diff := cmp.Diff(res.GatewayClasses, cp.GatewayClasses); diff != "" {
		t.Errorf("GatewayClasses (-translation +Applied):\n%s", diff)
	}
	for _, g := range cp.Gateways {
		cp.SetProgrammed(g.Gateway, Programmed{Ready: true})
	}
	for _, c := range cp.GatewayClasses {
		cp.SetCloudAccount(c.Ref.Name, CloudAccount{Account: "a"})
	}
	if diff := cmp.Diff(before, render(t, res, fx)); diff != "" {
		t.Errorf("programming the copy changed the translation:\n%s", diff)
	}
}
