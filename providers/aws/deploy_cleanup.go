package aws

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// Deletes that AWS refuses for a short while after what used the resource went (a target group
// after its load balancer, a security group while the ALB's interfaces are released) are retried
// this many times, the wait doubling from deleteBackoff; then the error is returned and the next
// run finishes the job.
const (
	deleteAttempts = 5
	deleteBackoff  = 200 * time.Millisecond
)

// cleanup deletes, after the Stack is in place, what carries the gateway's tags but is not in
// it, in reverse dependency order: rules, listeners, other load balancers, target groups,
// certificates (after the listeners that used them), security groups. Listeners of the
// gateway's load balancer that are not in the Stack go whatever their tags: the load balancer
// is fleetgate's, and a port it does not declare must not serve.
func (d *deployer) cleanup(ctx context.Context, st *state, x *executor) error {
	for _, r := range st.staleRules {
		if err := d.deleteRule(ctx, x, r); err != nil {
			return err
		}
	}
	for _, l := range st.listeners {
		if arn := aws.ToString(l.l.ListenerArn); !st.listenerKeep[arn] {
			if err := x.do(Call{"DeleteListener", resourceName(l.tags, arn), ""}, func() error {
				_, err := d.elb.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: &arn})
				if isNotFound(err) {
					return nil
				}
				return err
			}); err != nil {
				return err
			}
		}
	}
	var errs []error
	for _, lb := range st.obs.lbs {
		if arn := aws.ToString(lb.lb.LoadBalancerArn); arn != st.lbARN && arn != st.lbGone {
			if lb.attrs[attrDeletionProtection] == "true" {
				errs = append(errs, &DeletionProtectedError{LoadBalancer: lbName(&lb)})
				continue
			}
			if err := d.deleteLoadBalancer(ctx, x, arn); err != nil {
				return err
			}
		}
	}
	keepCerts := map[string]bool{}
	for _, arn := range st.certARN {
		keepCerts[arn] = true
	}
	keepSG := map[string]bool{st.sgID: true}
	errs = append(errs, d.deleteUnused(ctx, x, st.obs, st.tgKeep, keepCerts, keepSG))
	return errors.Join(errs...)
}

// deleteUnused deletes the observed target groups, certificates and security groups not kept.
func (d *deployer) deleteUnused(ctx context.Context, x *executor, obs *observed, keepTG, keepCert, keepSG map[string]bool) error {
	var errs []error
	for _, tg := range obs.tgs {
		if arn := aws.ToString(tg.tg.TargetGroupArn); !keepTG[arn] {
			errs = append(errs, x.do(Call{"DeleteTargetGroup", resourceName(tg.tags, arn), aws.ToString(tg.tg.TargetGroupName)}, func() error {
				return retryDelete(ctx, "ResourceInUse", func() error {
					_, err := d.elb.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: &arn})
					return err
				})
			}))
		}
	}
	for _, c := range obs.certs {
		if !keepCert[c.arn] {
			errs = append(errs, x.do(Call{"DeleteCertificate", resourceName(c.tags, c.arn), c.arn}, func() error {
				err := retryDelete(ctx, "ResourceInUseException", func() error {
					_, err := d.acm.DeleteCertificate(ctx, &acm.DeleteCertificateInput{CertificateArn: &c.arn})
					return err
				})
				if err == nil {
					d.certTags.set(c.arn, nil)
				}
				return err
			}))
		}
	}
	for _, sg := range obs.sgs {
		if id := aws.ToString(sg.sg.GroupId); !keepSG[id] {
			errs = append(errs, x.do(Call{"DeleteSecurityGroup", resourceName(sg.tags, id), id}, func() error {
				return retryDelete(ctx, "DependencyViolation", func() error {
					_, err := d.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: &id})
					return err
				})
			}))
		}
	}
	return errors.Join(errs...)
}

func (d *deployer) deleteLoadBalancer(ctx context.Context, x *executor, arn string) error {
	return x.do(Call{"DeleteLoadBalancer", lbResourceID, arn}, func() error {
		_, err := d.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: &arn})
		if isNotFound(err) {
			return nil
		}
		return err
	})
}

// retryDelete runs del until it succeeds, the resource is gone, or it failed with busy
// deleteAttempts times.
func retryDelete(ctx context.Context, busy string, del func() error) error {
	wait := deleteBackoff
	for attempt := 1; ; attempt++ {
		err := del()
		switch {
		case err == nil || isNotFound(err):
			return nil
		case !hasCode(err, busy) || attempt == deleteAttempts:
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// resourceName names a live resource by its Stack ID, else by its AWS ID.
func resourceName(tags map[string]string, id string) string {
	if r := tags[TagResource]; r != "" {
		return r
	}
	return id
}
