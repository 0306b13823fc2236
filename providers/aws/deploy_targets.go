package aws

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// syncTargets registers the Stack's targets that are missing and deregisters the others (AWS
// drains them for the target group's deregistration delay). Targets are compared by IP and
// port: the zone AWS records is its own.
func (d *deployer) syncTargets(ctx context.Context, st *state, x *executor) error {
	for _, tg := range st.stack.TargetGroups {
		arn := st.tgARN[tg.ID]
		have := map[string]bool{}
		for _, t := range st.tgTargets[tg.ID] {
			have[targetKey(t)] = true
		}
		want := map[string]bool{}
		var add []elbtypes.TargetDescription
		for _, t := range tg.Targets {
			want[targetKey(t)] = true
			if !have[targetKey(t)] {
				add = append(add, elbtypes.TargetDescription{Id: aws.String(t.IP), Port: aws.Int32(t.Port), AvailabilityZone: optString(t.AvailabilityZone)})
			}
		}
		var remove []elbtypes.TargetDescription
		for _, t := range st.tgTargets[tg.ID] {
			if !want[targetKey(t)] {
				remove = append(remove, elbtypes.TargetDescription{Id: aws.String(t.IP), Port: aws.Int32(t.Port)})
			}
		}
		if len(add) > 0 {
			if err := x.do(Call{"RegisterTargets", tg.ID, targetList(add)}, func() error {
				_, err := d.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: &arn, Targets: add})
				return err
			}); err != nil {
				return err
			}
		}
		if len(remove) > 0 {
			if err := x.do(Call{"DeregisterTargets", tg.ID, targetList(remove)}, func() error {
				_, err := d.elb.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: &arn, Targets: remove})
				return err
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

func targetKey(t Target) string { return fmt.Sprintf("%s:%d", t.IP, t.Port) }

func targetList(ts []elbtypes.TargetDescription) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s:%d", aws.ToString(t.Id), aws.ToInt32(t.Port))
	}
	return strings.Join(parts, ",")
}
