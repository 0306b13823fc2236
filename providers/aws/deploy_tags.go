package aws

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	acmtypes "github.com/aws/aws-sdk-go-v2/service/acm/types"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/fleetgate/fleetgate/providers"
)

// Tags on a resource fleetgate owns are exactly the ownership tags plus Stack.Tags: a user tag
// removed from the class or the Gateway is removed from the resource, and any other tag found on
// it (added by hand) is removed too. Only the reserved "aws:" keys are left alone. This keeps
// drift correction simple and total, at the price that hand-added tags on fleetgate's resources
// do not survive; tag the resources through the GatewayClassConfig or the Gateway instead.

// tagsFor is the full tag set of the Stack resource id; extra adds per-resource tags.
func (d *deployer) tagsFor(s *Stack, id string, extra map[string]string) map[string]string {
	t := make(map[string]string, len(s.Tags)+len(extra)+5)
	maps.Copy(t, s.Tags)
	maps.Copy(t, extra)
	t[TagManagedBy] = providers.ManagedBy
	t[TagFleet] = d.fleet
	t[TagGateway] = s.GatewayID
	t[TagGatewayKey] = s.Gateway
	t[TagResource] = id
	return t
}

// tagDiff returns the tags to set and the keys to remove to turn have into want.
func tagDiff(have, want map[string]string) (set map[string]string, remove []string) {
	set = map[string]string{}
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			set[k] = v
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "aws:") {
			remove = append(remove, k)
		}
	}
	slices.Sort(remove)
	return set, remove
}

func tagDetail(set map[string]string, remove []string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		parts = append(parts, k+"="+set[k])
	}
	for _, k := range remove {
		parts = append(parts, "-"+k)
	}
	return strings.Join(parts, " ")
}

// syncELBTags puts want on an ELBv2 resource whose tags are have.
func (d *deployer) syncELBTags(ctx context.Context, x *executor, resource, arn string, have, want map[string]string) error {
	set, remove := tagDiff(have, want)
	if len(set) > 0 {
		if err := x.do(Call{"AddTags", resource, tagDetail(set, nil)}, func() error {
			_, err := d.elb.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{arn}, Tags: elbTags(set)})
			return err
		}); err != nil {
			return err
		}
	}
	if len(remove) > 0 {
		return x.do(Call{"RemoveTags", resource, tagDetail(nil, remove)}, func() error {
			_, err := d.elb.RemoveTags(ctx, &elbv2.RemoveTagsInput{ResourceArns: []string{arn}, TagKeys: remove})
			return err
		})
	}
	return nil
}

func elbTags(m map[string]string) []elbtypes.Tag {
	tags := make([]elbtypes.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		tags = append(tags, elbtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return tags
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	tags := make([]ec2types.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return tags
}

func acmTags(m map[string]string) []acmtypes.Tag {
	tags := make([]acmtypes.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		tags = append(tags, acmtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return tags
}
