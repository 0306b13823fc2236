package aws

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// Actions and conditions are compared in a canonical text form, in which target groups are
// named by their Stack IDs: the same text serves as the Detail of a Call.

// sdkActions turns a Stack action into ELBv2's, with target group ARNs from st.
func (st *state) sdkActions(a Action) ([]elbtypes.Action, error) {
	switch {
	case a.Forward != nil:
		tuples := make([]elbtypes.TargetGroupTuple, len(a.Forward))
		for i, w := range a.Forward {
			arn, ok := st.tgARN[w.TargetGroup]
			if !ok {
				return nil, fmt.Errorf("action forwards to target group %s, which is not in the stack", w.TargetGroup)
			}
			tuples[i] = elbtypes.TargetGroupTuple{TargetGroupArn: aws.String(arn), Weight: aws.Int32(w.Weight)}
		}
		return []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, ForwardConfig: &elbtypes.ForwardActionConfig{TargetGroups: tuples}}}, nil
	case a.Redirect != nil:
		r := redirectDefaults(*a.Redirect)
		return []elbtypes.Action{{Type: elbtypes.ActionTypeEnumRedirect, RedirectConfig: &elbtypes.RedirectActionConfig{
			Protocol: &r.Protocol, Host: &r.Host, Port: &r.Port, Path: &r.Path, Query: &r.Query,
			StatusCode: elbtypes.RedirectActionStatusCodeEnum(r.StatusCode),
		}}}, nil
	case a.Fixed != nil:
		f := a.Fixed
		return []elbtypes.Action{{Type: elbtypes.ActionTypeEnumFixedResponse, FixedResponseConfig: &elbtypes.FixedResponseActionConfig{
			StatusCode: &f.StatusCode, ContentType: optString(f.ContentType), MessageBody: optString(f.Body),
		}}}, nil
	}
	return nil, fmt.Errorf("action has no forward, redirect or fixed response")
}

// redirectDefaults fills what ELBv2 fills for unset redirect fields, so that both sides compare.
func redirectDefaults(r Redirect) Redirect {
	for _, f := range []struct {
		v   *string
		def string
	}{{&r.Protocol, "#{protocol}"}, {&r.Host, "#{host}"}, {&r.Port, "#{port}"}, {&r.Path, "/#{path}"}, {&r.Query, "#{query}"}} {
		if *f.v == "" {
			*f.v = f.def
		}
	}
	return r
}

// actionText is the canonical text of a Stack action.
func actionText(a Action) string {
	switch {
	case a.Forward != nil:
		parts := make([]string, len(a.Forward))
		for i, w := range a.Forward {
			parts[i] = fmt.Sprintf("%s=%d", w.TargetGroup, w.Weight)
		}
		slices.Sort(parts)
		return "forward " + strings.Join(parts, ",")
	case a.Redirect != nil:
		r := redirectDefaults(*a.Redirect)
		return fmt.Sprintf("redirect %s %s://%s:%s%s?%s", r.StatusCode, r.Protocol, r.Host, r.Port, r.Path, r.Query)
	case a.Fixed != nil:
		return fmt.Sprintf("fixed-response %s %s %q", a.Fixed.StatusCode, a.Fixed.ContentType, a.Fixed.Body)
	}
	return "none"
}

// liveActionText is the canonical text of ELBv2 actions; tgID names target group ARNs.
func liveActionText(actions []elbtypes.Action, tgID func(arn string) string) string {
	if len(actions) != 1 {
		return fmt.Sprintf("%d actions", len(actions))
	}
	a := actions[0]
	switch a.Type {
	case elbtypes.ActionTypeEnumForward:
		var fwd []WeightedTargetGroup
		if a.ForwardConfig != nil && len(a.ForwardConfig.TargetGroups) > 0 {
			for _, t := range a.ForwardConfig.TargetGroups {
				w := int32(1) // ELBv2's default weight
				if t.Weight != nil {
					w = *t.Weight
				}
				fwd = append(fwd, WeightedTargetGroup{TargetGroup: tgID(aws.ToString(t.TargetGroupArn)), Weight: w})
			}
		} else {
			fwd = []WeightedTargetGroup{{TargetGroup: tgID(aws.ToString(a.TargetGroupArn)), Weight: 1}}
		}
		return actionText(Action{Forward: fwd})
	case elbtypes.ActionTypeEnumRedirect:
		if r := a.RedirectConfig; r != nil {
			return actionText(Action{Redirect: &Redirect{
				Protocol: aws.ToString(r.Protocol), Host: aws.ToString(r.Host), Port: aws.ToString(r.Port),
				Path: aws.ToString(r.Path), Query: aws.ToString(r.Query), StatusCode: string(r.StatusCode),
			}})
		}
	case elbtypes.ActionTypeEnumFixedResponse:
		if f := a.FixedResponseConfig; f != nil {
			return actionText(Action{Fixed: &FixedResponse{StatusCode: aws.ToString(f.StatusCode), ContentType: aws.ToString(f.ContentType), Body: aws.ToString(f.MessageBody)}})
		}
	}
	return string(a.Type)
}

func sdkConditions(cs []Condition) []elbtypes.RuleCondition {
	out := make([]elbtypes.RuleCondition, len(cs))
	for i, c := range cs {
		rc := elbtypes.RuleCondition{Field: aws.String(c.Field)}
		switch c.Field {
		case "host-header":
			rc.HostHeaderConfig = &elbtypes.HostHeaderConditionConfig{Values: c.Values}
		case "path-pattern":
			rc.PathPatternConfig = &elbtypes.PathPatternConditionConfig{Values: c.Values}
		case "http-header":
			rc.HttpHeaderConfig = &elbtypes.HttpHeaderConditionConfig{HttpHeaderName: aws.String(c.HeaderName), Values: c.Values}
		case "http-request-method":
			rc.HttpRequestMethodConfig = &elbtypes.HttpRequestMethodConditionConfig{Values: c.Values}
		case "query-string":
			kvs := make([]elbtypes.QueryStringKeyValuePair, len(c.Query))
			for j, kv := range c.Query {
				kvs[j] = elbtypes.QueryStringKeyValuePair{Key: optString(kv.Key), Value: aws.String(kv.Value)}
			}
			rc.QueryStringConfig = &elbtypes.QueryStringConditionConfig{Values: kvs}
		default:
			rc.Values = c.Values
		}
		out[i] = rc
	}
	return out
}

// conditionsText is the canonical text of Stack conditions: order does not matter to ELBv2.
func conditionsText(cs []Condition) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		vals := slices.Clone(c.Values)
		for _, kv := range c.Query {
			vals = append(vals, kv.Key+"="+kv.Value)
		}
		slices.Sort(vals)
		name := c.Field
		if c.HeaderName != "" {
			name += ":" + strings.ToLower(c.HeaderName)
		}
		parts[i] = name + "=[" + strings.Join(vals, " ") + "]"
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// liveConditionsText reads ELBv2 conditions back into Stack form, then into text.
func liveConditionsText(rcs []elbtypes.RuleCondition) string {
	cs := make([]Condition, len(rcs))
	for i, rc := range rcs {
		c := Condition{Field: aws.ToString(rc.Field), Values: rc.Values}
		switch {
		case rc.HostHeaderConfig != nil:
			c.Values = rc.HostHeaderConfig.Values
		case rc.PathPatternConfig != nil:
			c.Values = rc.PathPatternConfig.Values
		case rc.HttpHeaderConfig != nil:
			c.HeaderName, c.Values = aws.ToString(rc.HttpHeaderConfig.HttpHeaderName), rc.HttpHeaderConfig.Values
		case rc.HttpRequestMethodConfig != nil:
			c.Values = rc.HttpRequestMethodConfig.Values
		case rc.QueryStringConfig != nil:
			c.Values = nil
			for _, kv := range rc.QueryStringConfig.Values {
				c.Query = append(c.Query, KeyValue{Key: aws.ToString(kv.Key), Value: aws.ToString(kv.Value)})
			}
		}
		cs[i] = c
	}
	return conditionsText(cs)
}

// tgIDs names target group ARNs by Stack ID; unknown ARNs stay ARNs (and so differ).
func (st *state) tgIDs() func(string) string {
	ids := make(map[string]string, len(st.tgARN))
	for id, arn := range st.tgARN {
		ids[arn] = id
	}
	return func(arn string) string {
		if id, ok := ids[arn]; ok {
			return id
		}
		return arn
	}
}
