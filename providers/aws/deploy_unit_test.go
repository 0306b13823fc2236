package aws

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
)

func TestTagDiff(t *testing.T) {
	tests := []struct {
		name       string
		have, want map[string]string
		set        map[string]string
		remove     []string
	}{
		{"equal", map[string]string{"a": "1"}, map[string]string{"a": "1"}, map[string]string{}, nil},
		{"missing and changed", map[string]string{"a": "1"}, map[string]string{"a": "2", "b": "3"}, map[string]string{"a": "2", "b": "3"}, nil},
		{"extra removed, aws: kept", map[string]string{"a": "1", "x": "y", "aws:cloudformation:stack": "s"}, map[string]string{"a": "1"}, map[string]string{}, []string{"x"}},
	}
	for _, tt := range tests {
		set, remove := tagDiff(tt.have, tt.want)
		if diff := cmp.Diff(tt.set, set); diff != "" {
			t.Errorf("%s: set (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.remove, remove); diff != "" {
			t.Errorf("%s: remove (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestConditionsRoundTrip: what the deployer sends reads back as the same text, whatever the
// order of conditions and values, and a real difference shows.
func TestConditionsRoundTrip(t *testing.T) {
	cs := []Condition{
		{Field: "host-header", Values: []string{"a.example.com", "b.example.com"}},
		{Field: "path-pattern", Values: []string{"/x/*"}},
		{Field: "http-header", HeaderName: "X-Env", Values: []string{"prod"}},
		{Field: "query-string", Query: []KeyValue{{"", "v"}, {"k", "2"}}},
		{Field: "http-request-method", Values: []string{"GET"}},
	}
	sent := sdkConditions(cs)
	if got, want := liveConditionsText(sent), conditionsText(cs); got != want {
		t.Errorf("read back %q, sent %q", got, want)
	}
	reordered := []elbtypes.RuleCondition{sent[4], sent[3], sent[2], sent[1],
		{Field: aws.String("host-header"), Values: []string{"b.example.com", "a.example.com"}}} // legacy Values form
	if got, want := liveConditionsText(reordered), conditionsText(cs); got != want {
		t.Errorf("reordered read back %q, want %q", got, want)
	}
	changed := sdkConditions([]Condition{{Field: "host-header", Values: []string{"a.example.com"}}})
	if liveConditionsText(changed) == conditionsText(cs) {
		t.Error("a different condition set reads as equal")
	}
}

func TestActionText(t *testing.T) {
	st := &state{tgARN: map[string]string{"tg/a": "arn:a", "tg/b": "arn:b"}}
	tests := []struct {
		name string
		want Action
		live []elbtypes.Action
		same bool
	}{
		{"forward weights", Action{Forward: []WeightedTargetGroup{{"tg/a", 80}, {"tg/b", 20}}}, nil, true},
		{"forward single ARN form", Action{Forward: []WeightedTargetGroup{{"tg/a", 1}}},
			[]elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String("arn:a")}}, true},
		{"forward other weights", Action{Forward: []WeightedTargetGroup{{"tg/a", 80}, {"tg/b", 20}}},
			[]elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, ForwardConfig: &elbtypes.ForwardActionConfig{TargetGroups: []elbtypes.TargetGroupTuple{
				{TargetGroupArn: aws.String("arn:a"), Weight: aws.Int32(50)}, {TargetGroupArn: aws.String("arn:b"), Weight: aws.Int32(50)}}}}}, false},
		{"forward to a foreign group", Action{Forward: []WeightedTargetGroup{{"tg/a", 1}}},
			[]elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String("arn:other")}}, false},
		{"redirect defaults", Action{Redirect: &Redirect{Protocol: "HTTPS", StatusCode: "HTTP_301"}},
			[]elbtypes.Action{{Type: elbtypes.ActionTypeEnumRedirect, RedirectConfig: &elbtypes.RedirectActionConfig{Protocol: aws.String("HTTPS"),
				Host: aws.String("#{host}"), Port: aws.String("#{port}"), Path: aws.String("/#{path}"), Query: aws.String("#{query}"), StatusCode: "HTTP_301"}}}, true},
		{"fixed", Action{Fixed: &FixedResponse{StatusCode: "404", ContentType: "text/plain", Body: "no"}}, nil, true},
		{"fixed vs redirect", Action{Fixed: &FixedResponse{StatusCode: "404"}},
			[]elbtypes.Action{{Type: elbtypes.ActionTypeEnumRedirect, RedirectConfig: &elbtypes.RedirectActionConfig{StatusCode: "HTTP_301"}}}, false},
	}
	for _, tt := range tests {
		live := tt.live
		if live == nil {
			var err error
			if live, err = st.sdkActions(tt.want); err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
		}
		if got := liveActionText(live, st.tgIDs()) == actionText(tt.want); got != tt.same {
			t.Errorf("%s: equal = %v (live %q, want %q)", tt.name, got, liveActionText(live, st.tgIDs()), actionText(tt.want))
		}
	}
	if _, err := st.sdkActions(Action{Forward: []WeightedTargetGroup{{"tg/missing", 1}}}); err == nil {
		t.Error("forward to a target group outside the stack: no error")
	}
}

func TestReplacementChanges(t *testing.T) {
	live := elbtypes.LoadBalancer{Type: "application", Scheme: "internet-facing", IpAddressType: "ipv4"}
	tests := []struct {
		name string
		want LoadBalancer
		out  []string
	}{
		{"same", LoadBalancer{Type: "application", Scheme: "internet-facing", IPAddressType: "ipv4"}, nil},
		{"scheme and type", LoadBalancer{Type: "network", Scheme: "internal", IPAddressType: "ipv4"},
			[]string{"type application→network", "scheme internet-facing→internal"}},
		{"ip address type", LoadBalancer{Type: "application", Scheme: "internet-facing", IPAddressType: "dualstack"}, []string{"ipAddressType ipv4→dualstack"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.out, replacementChanges(tt.want, live)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestMoveRules: moves never target a priority in use when their call runs (ELBv2 checks each
// pair against the state before the call), chains go last link first, cycles via a free slot.
func TestMoveRules(t *testing.T) {
	rule := func(arn string, p int32) *liveRule {
		return &liveRule{r: elbtypes.Rule{RuleArn: aws.String(arn)}, priority: p}
	}
	tests := []struct {
		name  string
		live  map[string]int32
		prio  map[string]int32
		calls []string
	}{
		{"none", map[string]int32{"a": 1}, map[string]int32{"a": 1}, nil},
		{"chain", map[string]int32{"a": 1, "b": 2}, map[string]int32{"a": 2, "b": 3},
			[]string{"SetRulePriorities listener/443: b=3", "SetRulePriorities listener/443: a=2"}},
		{"independent in one call", map[string]int32{"a": 1, "b": 2}, map[string]int32{"a": 5, "b": 6},
			[]string{"SetRulePriorities listener/443: a=5 b=6"}},
		{"swap", map[string]int32{"a": 1, "b": 2}, map[string]int32{"a": 2, "b": 1},
			[]string{"SetRulePriorities listener/443: a=50000", "SetRulePriorities listener/443: b=1", "SetRulePriorities listener/443: a=2"}},
	}
	for _, tt := range tests {
		live := map[string]*liveRule{}
		occupied := map[int32]bool{}
		for id, p := range tt.live {
			live[id] = rule("arn:"+id, p)
			occupied[p] = true
		}
		x := &executor{dry: true}
		d := newDeployer(nil, nil, nil, "f", logr.Discard())
		if err := d.moveRules(context.Background(), x, Listener{ID: "listener/443"}, live, tt.prio, occupied); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []string
		for _, c := range x.calls {
			got = append(got, c.String())
		}
		if diff := cmp.Diff(tt.calls, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// busyELB fails DeleteTargetGroup with ResourceInUse a number of times, as AWS does for a moment
// after the load balancer using the group is deleted (moto never does).
type busyELB struct {
	elbAPI
	busy  int
	calls int
}

func (b *busyELB) DeleteTargetGroup(ctx context.Context, in *elbv2.DeleteTargetGroupInput, opts ...func(*elbv2.Options)) (*elbv2.DeleteTargetGroupOutput, error) {
	b.calls++
	if b.calls <= b.busy {
		return nil, &smithy.GenericAPIError{Code: "ResourceInUse", Message: "in use"}
	}
	if b.elbAPI == nil {
		return nil, &smithy.GenericAPIError{Code: "TargetGroupNotFound"}
	}
	return b.elbAPI.DeleteTargetGroup(ctx, in, opts...)
}

func TestRetryDelete(t *testing.T) {
	tests := []struct {
		name    string
		busy    int
		wantErr bool
		calls   int
	}{
		{"gone at once", 0, false, 1},
		{"busy then gone", 2, false, 3},
		{"busy for good", 10, true, deleteAttempts},
	}
	for _, tt := range tests {
		b := &busyELB{busy: tt.busy}
		err := retryDelete(context.Background(), "ResourceInUse", func() error {
			_, err := b.DeleteTargetGroup(context.Background(), &elbv2.DeleteTargetGroupInput{})
			return err
		})
		if (err != nil) != tt.wantErr || b.calls != tt.calls {
			t.Errorf("%s: err %v after %d calls, want error %v after %d", tt.name, err, b.calls, tt.wantErr, tt.calls)
		}
		if tt.wantErr && !hasCode(err, "ResourceInUse") {
			t.Errorf("%s: %v, want the AWS error", tt.name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := retryDelete(ctx, "ResourceInUse", func() error { return &smithy.GenericAPIError{Code: "ResourceInUse"} })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}
