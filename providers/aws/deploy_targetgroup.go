package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// syncTargetGroups creates missing target groups and reconciles the health check, attributes
// and tags of existing ones. Protocol, port, VPC and protocol version cannot change on a target
// group: one that differs is replaced, the new one created (under its new name) before listeners
// and rules move to it, the old one deleted by cleanup.
func (d *deployer) syncTargetGroups(ctx context.Context, st *state, x *executor) error {
	st.tgKeep = map[string]bool{}
	st.tgTargets = map[string][]Target{}
	for _, tg := range st.stack.TargetGroups {
		tags := d.tagsFor(st.stack, tg.ID, nil)
		live, err := st.liveTargetGroup(tg)
		if err != nil {
			return err
		}
		if live == nil {
			if err := d.createTargetGroup(ctx, st, x, tg, tags); err != nil {
				return err
			}
			continue
		}
		arn := aws.ToString(live.tg.TargetGroupArn)
		st.tgARN[tg.ID], st.tgKeep[arn], st.tgTargets[tg.ID] = arn, true, live.targets
		if in := healthCheckUpdate(tg, live.tg); in != nil {
			in.TargetGroupArn = &arn
			if err := x.do(Call{"ModifyTargetGroup", tg.ID, healthCheckDetail(tg.HealthCheck)}, func() error {
				_, err := d.elb.ModifyTargetGroup(ctx, in)
				return err
			}); err != nil {
				return err
			}
		}
		if err := d.setTargetGroupAttributes(ctx, x, tg.ID, arn, changedAttributes(live.attrs, tg.Attributes)); err != nil {
			return err
		}
		if err := d.syncELBTags(ctx, x, tg.ID, arn, live.tags, tags); err != nil {
			return err
		}
	}
	return nil
}

// liveTargetGroup is the observed target group of tg whose immutable properties match, nil if
// none does.
func (st *state) liveTargetGroup(tg TargetGroup) (*liveTG, error) {
	for i, l := range st.obs.tgs {
		if l.tags[TagResource] != tg.ID {
			continue
		}
		if string(l.tg.Protocol) == tg.Protocol && aws.ToInt32(l.tg.Port) == tg.Port && aws.ToString(l.tg.VpcId) == tg.VPC &&
			(tg.ProtocolVersion == "" || aws.ToString(l.tg.ProtocolVersion) == tg.ProtocolVersion) {
			return &st.obs.tgs[i], nil
		}
		if aws.ToString(l.tg.TargetGroupName) == tg.Name {
			return nil, fmt.Errorf("target group %s (%s) must be replaced but its replacement has the same name", tg.ID, tg.Name)
		}
	}
	return nil, nil
}

func (d *deployer) createTargetGroup(ctx context.Context, st *state, x *executor, tg TargetGroup, tags map[string]string) error {
	in := &elbv2.CreateTargetGroupInput{
		Name: &tg.Name, Protocol: elbtypes.ProtocolEnum(tg.Protocol), Port: &tg.Port, VpcId: &tg.VPC,
		TargetType: elbtypes.TargetTypeEnumIp, Tags: elbTags(tags),
	}
	if tg.ProtocolVersion != "" {
		in.ProtocolVersion = &tg.ProtocolVersion
	}
	hc := tg.HealthCheck
	in.HealthCheckEnabled = aws.Bool(true)
	if hc.Protocol != "" {
		in.HealthCheckProtocol = elbtypes.ProtocolEnum(hc.Protocol)
	}
	in.HealthCheckPort = optString(hc.Port)
	in.HealthCheckIntervalSeconds = optInt32(hc.IntervalSeconds)
	in.HealthCheckTimeoutSeconds = optInt32(hc.TimeoutSeconds)
	in.HealthyThresholdCount = optInt32(hc.HealthyThreshold)
	in.UnhealthyThresholdCount = optInt32(hc.UnhealthyThreshold)
	if httpHealthCheck(hc) {
		in.HealthCheckPath = optString(hc.Path)
		in.Matcher = matcher(tg)
	}
	arn := placeholder(tg.ID)
	if err := x.do(Call{"CreateTargetGroup", tg.ID, fmt.Sprintf("%s %s:%d in %s", tg.Name, tg.Protocol, tg.Port, tg.VPC)}, func() error {
		out, err := d.elb.CreateTargetGroup(ctx, in)
		if err == nil {
			arn = aws.ToString(out.TargetGroups[0].TargetGroupArn)
		}
		return err
	}); err != nil {
		return err
	}
	st.tgARN[tg.ID], st.tgKeep[arn] = arn, true
	return d.setTargetGroupAttributes(ctx, x, tg.ID, arn, tg.Attributes)
}

func (d *deployer) setTargetGroupAttributes(ctx context.Context, x *executor, id, arn string, attrs map[string]string) error {
	if len(attrs) == 0 {
		return nil
	}
	return x.do(Call{"ModifyTargetGroupAttributes", id, attrDetail(attrs)}, func() error {
		kvs := make([]elbtypes.TargetGroupAttribute, 0, len(attrs))
		for _, k := range slices.Sorted(maps.Keys(attrs)) {
			kvs = append(kvs, elbtypes.TargetGroupAttribute{Key: aws.String(k), Value: aws.String(attrs[k])})
		}
		_, err := d.elb.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: &arn, Attributes: kvs})
		return err
	})
}

// healthCheckUpdate is the ModifyTargetGroup input that puts tg's health check on live, nil
// when they agree. Unset (zero) fields of the Stack are AWS's to choose and not compared.
func healthCheckUpdate(tg TargetGroup, live elbtypes.TargetGroup) *elbv2.ModifyTargetGroupInput {
	hc := tg.HealthCheck
	in := &elbv2.ModifyTargetGroupInput{}
	changed := false
	if hc.Protocol != "" && string(live.HealthCheckProtocol) != hc.Protocol {
		in.HealthCheckProtocol, changed = elbtypes.ProtocolEnum(hc.Protocol), true
	}
	for _, f := range []struct {
		want string
		have *string
		set  **string
	}{
		{hc.Port, live.HealthCheckPort, &in.HealthCheckPort},
		{pathIfHTTP(hc), live.HealthCheckPath, &in.HealthCheckPath},
	} {
		if f.want != "" && aws.ToString(f.have) != f.want {
			*f.set, changed = aws.String(f.want), true
		}
	}
	for _, f := range []struct {
		want int32
		have *int32
		set  **int32
	}{
		{hc.IntervalSeconds, live.HealthCheckIntervalSeconds, &in.HealthCheckIntervalSeconds},
		{hc.TimeoutSeconds, live.HealthCheckTimeoutSeconds, &in.HealthCheckTimeoutSeconds},
		{hc.HealthyThreshold, live.HealthyThresholdCount, &in.HealthyThresholdCount},
		{hc.UnhealthyThreshold, live.UnhealthyThresholdCount, &in.UnhealthyThresholdCount},
	} {
		if f.want != 0 && aws.ToInt32(f.have) != f.want {
			*f.set, changed = aws.Int32(f.want), true
		}
	}
	if m := matcher(tg); httpHealthCheck(hc) && m != nil && (live.Matcher == nil ||
		aws.ToString(live.Matcher.HttpCode) != aws.ToString(m.HttpCode) || aws.ToString(live.Matcher.GrpcCode) != aws.ToString(m.GrpcCode)) {
		in.Matcher, changed = m, true
	}
	if !changed {
		return nil
	}
	return in
}

func httpHealthCheck(hc HealthCheck) bool { return hc.Protocol == "HTTP" || hc.Protocol == "HTTPS" }

func pathIfHTTP(hc HealthCheck) string {
	if httpHealthCheck(hc) {
		return hc.Path
	}
	return ""
}

// matcher: gRPC codes for GRPC target groups, HTTP codes otherwise.
func matcher(tg TargetGroup) *elbtypes.Matcher {
	if tg.HealthCheck.Matcher == "" {
		return nil
	}
	if tg.ProtocolVersion == "GRPC" {
		return &elbtypes.Matcher{GrpcCode: aws.String(tg.HealthCheck.Matcher)}
	}
	return &elbtypes.Matcher{HttpCode: aws.String(tg.HealthCheck.Matcher)}
}

func healthCheckDetail(hc HealthCheck) string {
	return fmt.Sprintf("health check %s:%s%s every %ds", hc.Protocol, hc.Port, hc.Path, hc.IntervalSeconds)
}

// changedAttributes are the entries of want that have differs on.
func changedAttributes(have, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		if have[k] != v {
			out[k] = v
		}
	}
	return out
}

func attrDetail(attrs map[string]string) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		if s != "" {
			s += " "
		}
		s += k + "=" + attrs[k]
	}
	return s
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optInt32(v int32) *int32 {
	if v == 0 {
		return nil
	}
	return &v
}
