package gcpfake

import (
	"context"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// TestFirewalls: firewall rules are global (no regional form), replaced whole by Update, and
// listed with the name filter; per the compute v1 reference they carry no fingerprint.
func TestFirewalls(t *testing.T) {
	s := NewServer(t)
	ctx := context.Background()
	c, err := compute.NewFirewallsRESTClient(ctx, s.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fw := &computepb.Firewall{Name: proto.String("fg-fw"), Network: proto.String("global/networks/default"),
		Direction: proto.String("INGRESS"), SourceRanges: []string{"35.191.0.0/16"},
		Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"8080"}}}}
	op, err := c.Insert(ctx, &computepb.InsertFirewallRequest{Project: "p", FirewallResource: fw})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Insert(ctx, &computepb.InsertFirewallRequest{Project: "p", FirewallResource: fw}); !isCode(err, 409) {
		t.Errorf("second insert: %v, want 409", err)
	}
	fw.Allowed[0].Ports = []string{"8080", "9090"}
	fw.SourceRanges = nil
	if op, err = c.Update(ctx, &computepb.UpdateFirewallRequest{Project: "p", Firewall: "fg-fw", FirewallResource: fw}); err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, &computepb.GetFirewallRequest{Project: "p", Firewall: "fg-fw"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetSourceRanges()) != 0 || len(got.GetAllowed()[0].GetPorts()) != 2 {
		t.Errorf("after Update: %v, want the ranges emptied and two ports", got)
	}
	it := c.List(ctx, &computepb.ListFirewallsRequest{Project: "p", Filter: proto.String(`name eq "fg-.*"`)})
	if n, err := it.Next(); err != nil || n.GetName() != "fg-fw" {
		t.Errorf("list: %v, %v", n, err)
	}
	if op, err = c.Delete(ctx, &computepb.DeleteFirewallRequest{Project: "p", Firewall: "fg-fw"}); err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Count("firewalls") != 0 {
		t.Error("the firewall rule is still there")
	}
}
