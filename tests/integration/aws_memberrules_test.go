package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/controllers/fleet"
	"github.com/fleetgate/fleetgate/providers"
	awsprovider "github.com/fleetgate/fleetgate/providers/aws"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// startMemberRulesOperator runs the operator with the aws provider wired as main's wire.go wires
// it for member rules: member specs without the members being deleted, records on the
// MemberClusters, the sweep and the MemberCluster watch that rechecks every aws gateway.
func (e *awsEnv) startMemberRulesOperator() (stop func()) {
	t := e.t
	ctx, cancel := context.WithCancel(context.Background())
	rules := fleet.NewAWSRules(e.c.Client, testr.New(t).WithName("member-rules"))
	p, err := awsprovider.New(awsprovider.Options{
		Fleet:    e.fleet,
		Defaults: v1alpha1.AWSOptions{Region: mototest.Region, Endpoint: e.moto.URL},
		Secrets:  secretsOf(e.c.Client),
		Classes: func(ctx context.Context) ([]v1alpha1.AWSOptions, error) {
			var list v1alpha1.GatewayClassConfigList
			if err := e.c.Client.List(ctx, &list); err != nil {
				return nil, err
			}
			var out []v1alpha1.AWSOptions
			for _, c := range list.Items {
				if c.Spec.AWS != nil {
					out = append(out, *c.Spec.AWS)
				}
			}
			return out, nil
		},
		Members: func(ctx context.Context) (map[string]v1alpha1.MemberClusterSpec, error) {
			var list v1alpha1.MemberClusterList
			if err := e.c.Client.List(ctx, &list); err != nil {
				return nil, err
			}
			out := map[string]v1alpha1.MemberClusterSpec{}
			for _, m := range list.Items {
				if m.DeletionTimestamp.IsZero() {
					out[m.Name] = m.Spec
				}
			}
			return out, nil
		},
		Records:     rules,
		MaxAttempts: 2, MaxBackoff: 50 * time.Millisecond,
		Registerer: prometheus.NewRegistry(),
		Log:        testr.New(t),
	})
	must(t, err)
	registry := providers.NewRegistry()
	registry.Register(string(v1alpha1.ProviderAWS), p)
	delivery := controllers.NewTrigger()
	dataplane := &controllers.Dataplane{Providers: registry, Configs: newAckingConfigs(func() { delivery.Fire("") }), Delivered: delivery.Fire}
	stopOperator := runOperator(t, e.c, testr.NewWithOptions(t, testr.Options{Verbosity: 0}), controllers.Options{
		Registry: prometheus.NewRegistry(), Apply: dataplane, Delivery: delivery,
	})
	recheck := func() { dataplane.RecheckProvider(string(v1alpha1.ProviderAWS)) }
	rules.Sweep, rules.Swept = p.SweepMembers, recheck
	// The operator's manager cache in production; a cache of its own here.
	members, err := cache.New(e.c.Config, cache.Options{Scheme: e.c.Client.Scheme()})
	must(t, err)
	informer, err := members.GetInformer(ctx, &v1alpha1.MemberCluster{})
	must(t, err)
	must(t, rules.Watch(informer, recheck))
	done := make(chan struct{}, 2)
	go func() { _ = members.Start(ctx); done <- struct{}{} }()
	go func() { _ = rules.Start(ctx); done <- struct{}{} }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		<-done
		stopOperator()
	}
	t.Cleanup(stop)
	return stop
}

// TestAWSMemberRulesFollowMembers: on a real API server with moto, the security groups a
// MemberCluster names get the ALB's rule; moving the member to another group moves the rule within
// seconds (no resync); dropping the member's aws section while the operator is down revokes the
// rule when it starts again, and releases the member; deleting a member with rules revokes them,
// and its finalizer goes.
func TestAWSMemberRulesFollowMembers(t *testing.T) {
	e := newMotoEnv(t, "it-members")
	ctx, cl := t.Context(), e.c.Client
	group := func(name string) string {
		sg, err := e.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(name),
			Description: aws.String("member nodes"), VpcId: aws.String(e.vpc)})
		must(t, err)
		return aws.ToString(sg.GroupId)
	}
	sg1, sg2 := group("nodes-1"), group("nodes-2")
	must(t, cl.Create(ctx, &v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "aws-alb"},
		Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderAWS,
			AWS: &v1alpha1.AWSOptions{LoadBalancerType: v1alpha1.AWSApplication, VPC: e.vpc}}}))
	must(t, cl.Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "aws-alb"},
		Spec: gwv1.GatewayClassSpec{ControllerName: v1alpha1.ControllerName,
			ParametersRef: &gwv1.ParametersReference{Group: v1alpha1.Group, Kind: "GatewayClassConfig", Name: "aws-alb"}}}))
	e.backend("web", corev1.ProtocolTCP, 8080, "10.0.1.10")
	must(t, cl.Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "alb"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "aws-alb", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}))
	must(t, cl.Create(ctx, awsRoute("web", "a.example.com", "/")))
	memberAWS := func(groups ...string) *v1alpha1.MemberAWS { return &v1alpha1.MemberAWS{SecurityGroups: groups} }
	// The hub's own endpoints are of cluster "hub": its MemberCluster names their groups.
	must(t, cl.Create(ctx, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.HubCluster},
		Spec: v1alpha1.MemberClusterSpec{KubeconfigSecretRef: v1alpha1.SecretKeyRef{Name: "unused"}, Region: mototest.Region,
			Provider: v1alpha1.ProviderHints{VPC: e.vpc, AWS: memberAWS(sg1)}}}))
	setAWS := func(a *v1alpha1.MemberAWS) {
		var mc v1alpha1.MemberCluster
		must(t, cl.Get(ctx, client.ObjectKey{Name: v1alpha1.HubCluster}, &mc))
		before := mc.DeepCopy()
		mc.Spec.Provider.AWS = a
		must(t, cl.Patch(ctx, &mc, client.MergeFrom(before)))
	}
	// rules are the fleet's inbound rules on each group, as "port from source".
	rules := func() map[string][]string {
		out := map[string][]string{}
		for name, sg := range map[string]string{"sg1": sg1, "sg2": sg2} {
			r, err := e.ec2.DescribeSecurityGroupRules(ctx, &ec2.DescribeSecurityGroupRulesInput{Filters: []ec2types.Filter{
				{Name: aws.String("group-id"), Values: []string{sg}}, {Name: aws.String("tag:" + awsprovider.TagFleet), Values: []string{e.fleet}}}})
			must(t, err)
			for _, r := range r.SecurityGroupRules {
				if !aws.ToBool(r.IsEgress) && r.ReferencedGroupInfo != nil {
					out[name] = append(out[name], fmt.Sprintf("%d from %s", aws.ToInt32(r.FromPort), aws.ToString(r.ReferencedGroupInfo.GroupId)))
				}
			}
		}
		return out
	}
	waitRules := func(step string, want func() map[string][]string) time.Duration {
		t.Helper()
		start := time.Now()
		testbed.Eventually(t, 60*time.Second, func() error {
			if diff := cmp.Diff(want(), rules()); diff != "" {
				return fmt.Errorf("%s: member rules (-want +got):\n%s", step, diff)
			}
			return nil
		})
		return time.Since(start)
	}
	// record is the member's record and whether it holds the finalizer; gone when it is deleted.
	record := func() (string, bool, bool) {
		var mc v1alpha1.MemberCluster
		if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.HubCluster}, &mc); apierrors.IsNotFound(err) {
			return "", false, true
		} else if err != nil {
			t.Fatal(err)
		}
		return mc.Annotations[v1alpha1.AnnotationAWSRulesIn], controllerutil.ContainsFinalizer(&mc, v1alpha1.FinalizerMemberRules), false
	}

	stop := e.startMemberRulesOperator()
	e.gatewayAddress("alb")
	lbSG := ""
	testbed.Eventually(t, 60*time.Second, func() error {
		out, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + awsprovider.TagFleet), Values: []string{e.fleet}}}})
		if err != nil || len(out.SecurityGroups) != 1 {
			return fmt.Errorf("the ALB's security group: %v, %d found", err, len(out.SecurityGroups))
		}
		lbSG = aws.ToString(out.SecurityGroups[0].GroupId)
		return nil
	})
	waitRules("first", func() map[string][]string { return map[string][]string{"sg1": {"8080 from " + lbSG}} })
	if rec, fin, _ := record(); !fin || !strings.Contains(rec, `"region":"`+mototest.Region+`"`) || !strings.Contains(rec, e.moto.URL) {
		t.Errorf("after the first rule: record %q, finalizer %v; want the class's account and the finalizer", rec, fin)
	}

	// Another group: the rule moves at once, not at the 10-minute resync.
	setAWS(memberAWS(sg2))
	took := waitRules("moved", func() map[string][]string { return map[string][]string{"sg2": {"8080 from " + lbSG}} })
	t.Logf("the member rule moved to the new group %v after the MemberCluster changed", took)
	if took > 30*time.Second {
		t.Errorf("the rule took %v to follow the member, want seconds", took)
	}

	// The operator is down while the member drops its aws section: no spec names the account any
	// more, the record does, and the next start revokes the rule there and releases the member.
	stop()
	setAWS(nil)
	e.startMemberRulesOperator()
	waitRules("dropped while down", func() map[string][]string { return map[string][]string{} })
	testbed.Eventually(t, 30*time.Second, func() error {
		if rec, fin, _ := record(); rec != "" || fin {
			return fmt.Errorf("record %q, finalizer %v after the sweep; want neither", rec, fin)
		}
		return nil
	})

	// Back on sg1, then deleted: its rule goes, then the member.
	setAWS(memberAWS(sg1))
	waitRules("back", func() map[string][]string { return map[string][]string{"sg1": {"8080 from " + lbSG}} })
	if _, fin, _ := record(); !fin {
		t.Error("the member with a rule holds no finalizer")
	}
	must(t, cl.Delete(ctx, &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.HubCluster}}))
	waitRules("deleted", func() map[string][]string { return map[string][]string{} })
	testbed.Eventually(t, 30*time.Second, func() error {
		if _, _, gone := record(); !gone {
			return fmt.Errorf("MemberCluster %s is still there", v1alpha1.HubCluster)
		}
		return nil
	})
}

// TestAWSRulesRecords: the records on a real API server: Record writes the account and the
// finalizer once, whatever the number of calls; Forget of the last account removes both; a member
// being deleted or gone takes no record (no rule may be made for it), while forgetting on a gone
// member is done; a record that does not parse is an error, not an empty record. A sweep that
// fails for a member tells so in a Warning Event on its MemberCluster.
func TestAWSRulesRecords(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx, cl := t.Context(), c.Client
	r := fleet.NewAWSRules(cl, testr.New(t))
	mc := func(name string) *v1alpha1.MemberCluster {
		return &v1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.MemberClusterSpec{KubeconfigSecretRef: v1alpha1.SecretKeyRef{Name: "kc"}}}
	}
	get := func(name string) *v1alpha1.MemberCluster {
		var m v1alpha1.MemberCluster
		must(t, cl.Get(ctx, client.ObjectKey{Name: name}, &m))
		return &m
	}
	east := v1alpha1.AWSOptions{Region: "eu-west-1", Credentials: &v1alpha1.AWSCredentials{
		AssumeRole: &v1alpha1.AWSAssumeRole{RoleARN: "arn:aws:iam::222222222222:role/x", ExternalID: "e"}}}
	west := v1alpha1.AWSOptions{Region: "eu-west-2"}
	must(t, cl.Create(ctx, mc("a")))
	must(t, r.Record(ctx, "a", east))
	rv := get("a").ResourceVersion
	must(t, r.Record(ctx, "a", east))
	if got := get("a").ResourceVersion; got != rv {
		t.Errorf("recording a recorded account wrote the MemberCluster (resourceVersion %s → %s)", rv, got)
	}
	must(t, r.Record(ctx, "a", west))
	got, err := r.Recorded(ctx)
	must(t, err)
	if diff := cmp.Diff(map[string][]v1alpha1.AWSOptions{"a": {east, west}}, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if !controllerutil.ContainsFinalizer(get("a"), v1alpha1.FinalizerMemberRules) {
		t.Error("no finalizer with a record")
	}
	must(t, r.Forget(ctx, "a", []v1alpha1.AWSOptions{east}))
	if m := get("a"); !controllerutil.ContainsFinalizer(m, v1alpha1.FinalizerMemberRules) || strings.Contains(m.Annotations[v1alpha1.AnnotationAWSRulesIn], "222222222222") {
		t.Errorf("after forgetting one of two accounts: finalizers %v, record %q", m.Finalizers, m.Annotations[v1alpha1.AnnotationAWSRulesIn])
	}
	must(t, r.Forget(ctx, "a", []v1alpha1.AWSOptions{west}))
	if m := get("a"); len(m.Finalizers) != 0 || m.Annotations[v1alpha1.AnnotationAWSRulesIn] != "" {
		t.Errorf("after forgetting the last account: finalizers %v, annotations %v", m.Finalizers, m.Annotations)
	}

	// Being deleted (held by someone else's finalizer here), then gone.
	b := mc("b")
	b.Finalizers = []string{"example.com/hold"}
	must(t, cl.Create(ctx, b))
	must(t, cl.Delete(ctx, b))
	if err := r.Record(ctx, "b", east); err == nil {
		t.Error("a member being deleted took a record")
	}
	if err := r.Record(ctx, "gone", east); err == nil {
		t.Error("a member that does not exist took a record")
	}
	must(t, r.Forget(ctx, "gone", []v1alpha1.AWSOptions{east}))

	// A record that does not parse.
	bad := mc("bad")
	bad.Annotations = map[string]string{v1alpha1.AnnotationAWSRulesIn: "not json"}
	must(t, cl.Create(ctx, bad))
	if _, err := r.Recorded(ctx); err == nil || !strings.Contains(err.Error(), "MemberCluster bad") {
		t.Errorf("Recorded with a broken record: %v, want an error naming it", err)
	}

	rec := events.NewFakeRecorder(10)
	r.Recorder = rec
	r.Sweep = func(context.Context) error {
		return errors.Join(errors.New("listing the classes: timeout"),
			&awsprovider.MemberError{Members: []string{"a"}, Err: errors.New("api error AccessDenied")})
	}
	r.Swept = func() { t.Error("Swept after a failed sweep") }
	sweepCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Start(sweepCtx) }()
	select {
	case ev := <-rec.Events:
		if !strings.HasPrefix(ev, "Warning "+fleet.ReasonMemberRulesNotRevoked) || !strings.Contains(ev, "security groups of member a") {
			t.Errorf("event %q, want a Warning %s naming member a's error", ev, fleet.ReasonMemberRulesNotRevoked)
		}
	case <-time.After(30 * time.Second):
		t.Error("no Event for the failed sweep")
	}
	cancel()
	must(t, <-done)
}
