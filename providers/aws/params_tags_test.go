package aws

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws/mototest"
)

func TestAnnotationTags(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        map[string]string
		wantErr     string
	}{
		{name: "none", annotations: map[string]string{"other": "x"}},
		{name: "fleetgate's", annotations: map[string]string{AnnotationTags: "team=edge, cost=42 ,empty="},
			want: map[string]string{"team": "edge", "cost": "42", "empty": ""}},
		{name: "a value may hold =", annotations: map[string]string{AnnotationTags: "expr=a=b"}, want: map[string]string{"expr": "a=b"}},
		{name: "set but empty", annotations: map[string]string{AnnotationTags: " "}},
		{name: "LBC's, fleetgate's wins on a shared key", annotations: map[string]string{
			AnnotationLBCTags: "team=lbc,env=prod", AnnotationTags: "team=fleetgate"},
			want: map[string]string{"team": "fleetgate", "env": "prod"}},
		{name: "not key=value", annotations: map[string]string{AnnotationTags: "team=edge,oops"},
			wantErr: `annotation fleetgate.dev/aws-tags: "oops" is not key=value`},
		{name: "empty item", annotations: map[string]string{AnnotationTags: "team=edge,,cost=1"},
			wantErr: `annotation fleetgate.dev/aws-tags: "" is not key=value`},
		{name: "empty key", annotations: map[string]string{AnnotationTags: "=v"},
			wantErr: `annotation fleetgate.dev/aws-tags: "=v" has an empty key`},
		{name: "twice", annotations: map[string]string{AnnotationTags: "a=1,a=2"},
			wantErr: `annotation fleetgate.dev/aws-tags: key "a" is given twice`},
		{name: "aws: prefix", annotations: map[string]string{AnnotationLBCTags: "AWS:cloudformation=x"},
			wantErr: `annotation service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags["AWS:cloudformation"]: the aws: prefix is reserved for AWS`},
		{name: "ownership prefix", annotations: map[string]string{AnnotationTags: "fleetgate.dev/fleet=other"},
			wantErr: `annotation fleetgate.dev/aws-tags["fleetgate.dev/fleet"]: the fleetgate.dev/ prefix is reserved for fleetgate's ownership tags`},
		{name: "key too long", annotations: map[string]string{AnnotationTags: strings.Repeat("k", 129) + "=v"},
			wantErr: `annotation fleetgate.dev/aws-tags["` + strings.Repeat("k", 129) + `"]: key has 129 characters, needs 1-128`},
		{name: "value too long", annotations: map[string]string{AnnotationTags: "k=" + strings.Repeat("v", 257)},
			wantErr: `annotation fleetgate.dev/aws-tags["k"]: value has 257 characters, at most 256`},
		{name: "bad character", annotations: map[string]string{AnnotationTags: "k=a;b"},
			wantErr: `annotation fleetgate.dev/aws-tags["k"]: value may hold letters, digits, spaces and _.:/=+-@ only`},
		{name: "too many", annotations: map[string]string{AnnotationTags: manyTags(41)},
			wantErr: `annotation fleetgate.dev/aws-tags: 41 tags, at most 40 (AWS allows 50 per resource and fleetgate uses the rest)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := annotationTags(tc.annotations)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("annotationTags = %v, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}

func manyTags(n int) string {
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf("k%d=v", i))
	}
	return strings.Join(items, ",")
}

// TestStackTags: labels, then the class's tags, then the annotation's: the gateway's annotation
// wins over the class, the class over the labels.
func TestStackTags(t *testing.T) {
	tests := []struct {
		name        string
		class       map[string]string
		labels      map[string]string
		annotations map[string]string
		want        map[string]string
	}{
		{name: "nothing"},
		{name: "class over labels", class: map[string]string{"team": "platform"}, labels: map[string]string{"team": "app", "tier": "web"},
			want: map[string]string{"team": "platform", "tier": "web"}},
		{name: "annotation over class", class: map[string]string{"team": "platform", "cost": "1"},
			annotations: map[string]string{AnnotationTags: "cost=2,owner=alice"},
			want:        map[string]string{"team": "platform", "cost": "2", "owner": "alice"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stackTags(tc.class, &providers.LoadBalancer{Labels: tc.labels, Annotations: tc.annotations})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := stackTags(nil, &providers.LoadBalancer{Annotations: map[string]string{AnnotationTags: "aws:x=1"}}); err == nil {
		t.Error("an invalid annotation was taken")
	}
}

// TestAnnotationTagsRetag: on moto, a changed tags annotation re-tags every resource of an HTTPS
// ALB (load balancer, listeners, rules, target groups, security group, certificate) with tag
// calls alone; an invalid annotation makes the gateway Invalid without any AWS call.
func TestAnnotationTagsRetag(t *testing.T) {
	m := mototest.Require(t, moto)
	shim := mototest.NewFaults(m.URL)
	t.Cleanup(shim.Close)
	vpc := motoVPC(t, m.URL)
	fleet := "tags-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p := newTestProvider(t, shim.URL(), fleet)
	ctx := t.Context()
	cert := selfSigned(t, "tags.example.com", 1)
	alb := json.RawMessage(`{"loadBalancerType":"application","vpc":"` + vpc + `","tags":{"team":"edge","cost":"class"}}`)
	lb := httpModel("tags", alb, cert.CertPEM, cert.KeyPEM, "/", "/api")
	ensure := func() providers.Status {
		t.Helper()
		var st providers.Status
		for range 5 {
			var err error
			if st, err = p.Ensure(ctx, lb); err != nil {
				t.Fatal(err)
			}
			if st.Ready {
				break
			}
		}
		return st
	}
	// Every resource's user tags, by resource (ownership tags left out).
	userTags := func() map[string]map[string]string {
		t.Helper()
		out := map[string]map[string]string{}
		for _, r := range inventory(t, m.URL, fleet) {
			if !strings.HasPrefix(r.what, "listener") {
				out[r.id] = userTagsOf(r.version)
			}
		}
		cfg, err := mototest.Config(ctx, m.URL)
		if err != nil {
			t.Fatal(err)
		}
		elb := elbv2.NewFromConfig(cfg)
		lbs, err := elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lbs.LoadBalancers {
			ls, err := elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: l.LoadBalancerArn})
			if err != nil {
				t.Fatal(err)
			}
			for _, li := range ls.Listeners {
				tt, err := elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{*li.ListenerArn}})
				if err != nil {
					t.Fatal(err)
				}
				tags := map[string]string{}
				for _, tag := range tt.TagDescriptions[0].Tags {
					tags[*tag.Key] = awssdk.ToString(tag.Value)
				}
				if tags[TagFleet] == fleet {
					out[fmt.Sprintf("listener %s:%d", li.Protocol, *li.Port)] = userTagsOf(tagText(tags))
				}
			}
		}
		return out
	}
	check := func(step string, want map[string]string) {
		t.Helper()
		got := userTags()
		kinds := map[string]bool{}
		for id, tags := range got {
			kinds[strings.Fields(strings.TrimPrefix(id, lb.Gateway+" "))[0]] = true
			if diff := cmp.Diff(want, tags); diff != "" {
				t.Errorf("%s: %s user tags (-want +got):\n%s", step, id, diff)
			}
		}
		for _, k := range []string{"lb", "listener", "rule", "tg", "sg", "certificate"} {
			if !kinds[k] {
				t.Errorf("%s: no %s among %v", step, k, slices.Sorted(maps.Keys(got)))
			}
		}
	}

	lb.Annotations = map[string]string{AnnotationTags: "cost=gateway,owner=alice"}
	if st := ensure(); !st.Ready {
		t.Fatalf("not ready: %+v", st)
	}
	check("first", map[string]string{"team": "edge", "cost": "gateway", "owner": "alice"})

	shim.Reset()
	lb.Annotations = map[string]string{AnnotationTags: "cost=gateway-2,project=x"}
	ensure()
	mutating := map[string]int{}
	shim.Count(func(r mototest.Request) bool {
		if r.Mutating() {
			mutating[r.Action]++
		}
		return false
	})
	for action := range mutating {
		switch action {
		case "AddTags", "RemoveTags", "CreateTags", "DeleteTags", "AddTagsToCertificate", "RemoveTagsFromCertificate":
		default:
			t.Errorf("re-tagging made a %s call; calls: %v", action, mutating)
		}
	}
	t.Logf("re-tagging calls: %v", mutating)
	if mutating["AddTags"] == 0 || mutating["RemoveTags"] == 0 {
		t.Errorf("re-tagging calls %v: want AddTags and RemoveTags", mutating)
	}
	check("changed", map[string]string{"team": "edge", "cost": "gateway-2", "project": "x"})

	before := shim.Count(nil)
	lb.Annotations = map[string]string{AnnotationTags: "aws:owner=alice"}
	st, err := p.Ensure(ctx, lb)
	if err != nil || st.Reason != providers.ReasonInvalid || !strings.Contains(st.Message, "annotation "+AnnotationTags) {
		t.Errorf("invalid annotation: %+v, %v; want Invalid naming the annotation", st, err)
	}
	if n := shim.Count(nil) - before; n != 0 {
		t.Errorf("an invalid annotation made %d AWS calls", n)
	}
	lb.Annotations = nil
	if err := p.Delete(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// userTagsOf reads tagText back without the ownership tags.
func userTagsOf(text string) map[string]string {
	out := map[string]string{}
	for item := range strings.SplitSeq(strings.TrimSuffix(text, ";"), ";") {
		k, v, _ := strings.Cut(item, "=")
		if k != "" && !strings.HasPrefix(k, ownTagPrefix) {
			out[k] = v
		}
	}
	return out
}
