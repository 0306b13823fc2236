package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// Delete deletes everything with this fleet's and gatewayID's tags, load balancers first (their
// listeners and rules go with them), then target groups, certificates and security groups,
// retrying the short-lived refusals that follow a load balancer's deletion. Gone is success, so
// Delete can be called again at any time.
//
// A load balancer with deletion protection on is left standing with everything it uses (its
// listeners, rules, target groups, certificates, security groups), so that it keeps serving;
// what it does not use is deleted, and Delete returns *DeletionProtectedError.
func (d *deployer) Delete(ctx context.Context, gatewayID string) error {
	obs, err := d.observe(ctx, gatewayID, false)
	if err != nil {
		return err
	}
	x := &executor{}
	keepTG, keepCert, keepSG := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var errs []error
	for _, lb := range obs.lbs {
		arn := aws.ToString(lb.lb.LoadBalancerArn)
		out, err := d.elb.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: &arn})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("describing attributes of %s: %w", arn, err)
		}
		if lbAttributes(out.Attributes)[attrDeletionProtection] != "true" {
			if err := d.deleteLoadBalancer(ctx, x, arn); err != nil {
				return err
			}
			continue
		}
		errs = append(errs, &DeletionProtectedError{LoadBalancer: lbName(&lb)})
		for _, sg := range lb.lb.SecurityGroups {
			keepSG[sg] = true
		}
		listeners, err := d.observeListeners(ctx, arn)
		if err != nil {
			return err
		}
		for _, l := range listeners {
			for _, c := range l.certs {
				keepCert[c] = true
			}
			markTargetGroups(keepTG, l.l.DefaultActions)
			for _, r := range l.rules {
				markTargetGroups(keepTG, r.r.Actions)
			}
		}
	}
	errs = append(errs, d.deleteUnused(ctx, x, obs, keepTG, keepCert, keepSG))
	return errors.Join(errs...)
}

func markTargetGroups(keep map[string]bool, actions []elbtypes.Action) {
	for _, a := range actions {
		if a.TargetGroupArn != nil {
			keep[*a.TargetGroupArn] = true
		}
		if a.ForwardConfig != nil {
			for _, t := range a.ForwardConfig.TargetGroups {
				keep[aws.ToString(t.TargetGroupArn)] = true
			}
		}
	}
}

// Owned is a gateway of this fleet that has resources in the account.
type Owned struct {
	Gateway   string   // the gateway key (TagGatewayKey)
	GatewayID string   // providers.GatewayID of it (TagGateway), what Delete takes
	Clusters  []string // TagClusters of its load balancer, nil without one
}

// List returns every gateway of this fleet that owns a load balancer, target group, security
// group or certificate in the account, sorted by key: the orphan sweep compares it with the
// gateways that exist.
func (d *deployer) List(ctx context.Context) ([]Owned, error) {
	obs, err := d.observe(ctx, "", false)
	if err != nil {
		return nil, err
	}
	byID := map[string]*Owned{}
	add := func(tags map[string]string) *Owned {
		id := tags[TagGateway]
		o := byID[id]
		if o == nil {
			o = &Owned{Gateway: tags[TagGatewayKey], GatewayID: id}
			byID[id] = o
		}
		if o.Gateway == "" {
			o.Gateway = tags[TagGatewayKey]
		}
		return o
	}
	for _, lb := range obs.lbs {
		if c := lb.tags[TagClusters]; c != "" {
			add(lb.tags).Clusters = strings.Split(c, ",")
		} else {
			add(lb.tags)
		}
	}
	for _, tg := range obs.tgs {
		add(tg.tags)
	}
	for _, sg := range obs.sgs {
		add(sg.tags)
	}
	for _, c := range obs.certs {
		add(c.tags)
	}
	out := make([]Owned, 0, len(byID))
	for _, o := range byID {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b Owned) int {
		return strings.Compare(a.Gateway+"\x00"+a.GatewayID, b.Gateway+"\x00"+b.GatewayID)
	})
	return out, nil
}
