package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fleetgate/fleetgate/providers/aws/mototest"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// startMoto starts moto for the AWS part, or says in one line why there is none (nil server).
func startMoto() *mototest.Server {
	if _, err := mototest.Find(); err != nil {
		step("skipping the AWS part: moto is not installed (`make moto` installs it into bin/moto)")
		return nil
	}
	s, err := mototest.Start()
	if err != nil {
		step("skipping the AWS part: moto did not start: %v", err)
		return nil
	}
	return s
}

// showALB makes a VPC on moto, an ALB class on it and Gateway default/alb with a route to the echo
// Service, waits for the Gateway to be Programmed with the ALB's DNS name, and describes the ALB's
// listener rules from moto, then `fleetgate plan`, which finds nothing left to do.
func showALB(ctx context.Context, c client.Client, moto *mototest.Server, operator, kubeconfig string) error {
	step("AWS on moto (%s): creating a VPC with two subnets tagged kubernetes.io/role/elb", moto.URL)
	vpc, err := testbed.MotoVPC(ctx, moto.URL)
	if err != nil {
		return err
	}
	step("applying GatewayClassConfig aws-alb (provider aws, application, endpoint moto, keys from Secret fleetgate-system/aws-alb-keys), GatewayClass aws-alb")
	if err := testbed.CreateAll(ctx, c, testbed.AWSClass("aws-alb", moto.URL, vpc)...); err != nil {
		return err
	}
	step("applying Gateway default/alb (HTTP :80) and HTTPRoute default/alb (alb.example.com → Service echo)")
	if err := testbed.CreateAll(ctx, c, testbed.HTTPGateway("default", "alb", "aws-alb", "alb.example.com", "echo")...); err != nil {
		return err
	}
	start := time.Now()
	dns, err := waitALB(ctx, c)
	if err != nil {
		return err
	}
	fmt.Printf("    Gateway default/alb Programmed=True, status.addresses[0] = %s (Hostname) after %s\n", dns, time.Since(start).Round(time.Millisecond))
	step("the ALB's listener rules, described from moto")
	if err := describeRules(ctx, moto.URL, dns); err != nil {
		return err
	}
	args := []string{"plan", "--kubeconfig", kubeconfig, "--aws-region", mototest.Region, "--aws-endpoint", moto.URL}
	step("%s %s  (what the operator would still call: nothing)", operator, strings.Join(args, " "))
	out, err := exec.CommandContext(ctx, operator, args...).CombinedOutput()
	fmt.Printf("    %s\n", strings.ReplaceAll(strings.TrimSuffix(string(out), "\n"), "\n", "\n    "))
	if err != nil {
		return fmt.Errorf("fleetgate plan: %w", err)
	}
	return nil
}

func waitALB(ctx context.Context, c client.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	for {
		var gw gwv1.Gateway
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "alb"}, &gw); err == nil {
			if meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed)) && len(gw.Status.Addresses) > 0 {
				return gw.Status.Addresses[0].Value, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("the Gateway default/alb was not Programmed: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// describeRules prints each listener of the load balancer named by its DNS name, and its rules.
func describeRules(ctx context.Context, endpoint, dns string) error {
	cfg, err := mototest.Config(ctx, endpoint)
	if err != nil {
		return err
	}
	api := elbv2.NewFromConfig(cfg)
	lbs, err := api.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
	if err != nil {
		return fmt.Errorf("describing load balancers: %w", err)
	}
	for _, lb := range lbs.LoadBalancers {
		if awssdk.ToString(lb.DNSName) != dns {
			continue
		}
		fmt.Printf("    %s %s %s, state %s\n", lb.Type, awssdk.ToString(lb.LoadBalancerName), lb.Scheme, lb.State.Code)
		ls, err := api.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			return fmt.Errorf("describing listeners: %w", err)
		}
		for _, l := range ls.Listeners {
			fmt.Printf("    listener %s:%d\n", l.Protocol, awssdk.ToInt32(l.Port))
			rules, err := api.DescribeRules(ctx, &elbv2.DescribeRulesInput{ListenerArn: l.ListenerArn})
			if err != nil {
				return fmt.Errorf("describing rules: %w", err)
			}
			for _, r := range rules.Rules {
				fmt.Printf("      priority %-8s if %s then %s\n", awssdk.ToString(r.Priority), conditions(r.Conditions), actions(r.Actions))
			}
		}
		return nil
	}
	return fmt.Errorf("moto has no load balancer %s", dns)
}

func conditions(cs []elbv2types.RuleCondition) string {
	var out []string
	for _, c := range cs {
		var values []string
		switch {
		case c.HostHeaderConfig != nil:
			values = c.HostHeaderConfig.Values
		case c.PathPatternConfig != nil:
			values = c.PathPatternConfig.Values
		default:
			values = c.Values
		}
		out = append(out, awssdk.ToString(c.Field)+"="+strings.Join(values, ","))
	}
	if len(out) == 0 {
		return "anything"
	}
	return strings.Join(out, " and ")
}

func actions(as []elbv2types.Action) string {
	var out []string
	for _, a := range as {
		switch {
		case a.ForwardConfig != nil:
			var tgs []string
			for _, tg := range a.ForwardConfig.TargetGroups {
				arn := awssdk.ToString(tg.TargetGroupArn)
				tgs = append(tgs, fmt.Sprintf("%s weight %d", arn[strings.LastIndex(arn, ":")+1:], awssdk.ToInt32(tg.Weight)))
			}
			out = append(out, "forward to "+strings.Join(tgs, ", "))
		case a.FixedResponseConfig != nil:
			out = append(out, "fixed-response "+awssdk.ToString(a.FixedResponseConfig.StatusCode))
		default:
			out = append(out, string(a.Type))
		}
	}
	return strings.Join(out, "; ")
}
