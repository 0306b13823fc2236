package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// elbAPI is the part of the ELBv2 client the deployer calls; *elasticloadbalancingv2.Client
// satisfies it.
type elbAPI interface {
	DescribeLoadBalancers(ctx context.Context, in *elbv2.DescribeLoadBalancersInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancersOutput, error)
	DescribeLoadBalancerAttributes(ctx context.Context, in *elbv2.DescribeLoadBalancerAttributesInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeLoadBalancerAttributesOutput, error)
	DescribeTags(ctx context.Context, in *elbv2.DescribeTagsInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTagsOutput, error)
	DescribeTargetGroups(ctx context.Context, in *elbv2.DescribeTargetGroupsInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error)
	DescribeTargetGroupAttributes(ctx context.Context, in *elbv2.DescribeTargetGroupAttributesInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupAttributesOutput, error)
	DescribeTargetHealth(ctx context.Context, in *elbv2.DescribeTargetHealthInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error)
	DescribeListeners(ctx context.Context, in *elbv2.DescribeListenersInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeListenersOutput, error)
	DescribeListenerCertificates(ctx context.Context, in *elbv2.DescribeListenerCertificatesInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeListenerCertificatesOutput, error)
	DescribeRules(ctx context.Context, in *elbv2.DescribeRulesInput, opts ...func(*elbv2.Options)) (*elbv2.DescribeRulesOutput, error)

	CreateLoadBalancer(ctx context.Context, in *elbv2.CreateLoadBalancerInput, opts ...func(*elbv2.Options)) (*elbv2.CreateLoadBalancerOutput, error)
	DeleteLoadBalancer(ctx context.Context, in *elbv2.DeleteLoadBalancerInput, opts ...func(*elbv2.Options)) (*elbv2.DeleteLoadBalancerOutput, error)
	ModifyLoadBalancerAttributes(ctx context.Context, in *elbv2.ModifyLoadBalancerAttributesInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyLoadBalancerAttributesOutput, error)
	SetSecurityGroups(ctx context.Context, in *elbv2.SetSecurityGroupsInput, opts ...func(*elbv2.Options)) (*elbv2.SetSecurityGroupsOutput, error)
	SetSubnets(ctx context.Context, in *elbv2.SetSubnetsInput, opts ...func(*elbv2.Options)) (*elbv2.SetSubnetsOutput, error)
	CreateTargetGroup(ctx context.Context, in *elbv2.CreateTargetGroupInput, opts ...func(*elbv2.Options)) (*elbv2.CreateTargetGroupOutput, error)
	DeleteTargetGroup(ctx context.Context, in *elbv2.DeleteTargetGroupInput, opts ...func(*elbv2.Options)) (*elbv2.DeleteTargetGroupOutput, error)
	ModifyTargetGroup(ctx context.Context, in *elbv2.ModifyTargetGroupInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyTargetGroupOutput, error)
	ModifyTargetGroupAttributes(ctx context.Context, in *elbv2.ModifyTargetGroupAttributesInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyTargetGroupAttributesOutput, error)
	RegisterTargets(ctx context.Context, in *elbv2.RegisterTargetsInput, opts ...func(*elbv2.Options)) (*elbv2.RegisterTargetsOutput, error)
	DeregisterTargets(ctx context.Context, in *elbv2.DeregisterTargetsInput, opts ...func(*elbv2.Options)) (*elbv2.DeregisterTargetsOutput, error)
	CreateListener(ctx context.Context, in *elbv2.CreateListenerInput, opts ...func(*elbv2.Options)) (*elbv2.CreateListenerOutput, error)
	ModifyListener(ctx context.Context, in *elbv2.ModifyListenerInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyListenerOutput, error)
	DeleteListener(ctx context.Context, in *elbv2.DeleteListenerInput, opts ...func(*elbv2.Options)) (*elbv2.DeleteListenerOutput, error)
	AddListenerCertificates(ctx context.Context, in *elbv2.AddListenerCertificatesInput, opts ...func(*elbv2.Options)) (*elbv2.AddListenerCertificatesOutput, error)
	RemoveListenerCertificates(ctx context.Context, in *elbv2.RemoveListenerCertificatesInput, opts ...func(*elbv2.Options)) (*elbv2.RemoveListenerCertificatesOutput, error)
	CreateRule(ctx context.Context, in *elbv2.CreateRuleInput, opts ...func(*elbv2.Options)) (*elbv2.CreateRuleOutput, error)
	ModifyRule(ctx context.Context, in *elbv2.ModifyRuleInput, opts ...func(*elbv2.Options)) (*elbv2.ModifyRuleOutput, error)
	DeleteRule(ctx context.Context, in *elbv2.DeleteRuleInput, opts ...func(*elbv2.Options)) (*elbv2.DeleteRuleOutput, error)
	SetRulePriorities(ctx context.Context, in *elbv2.SetRulePrioritiesInput, opts ...func(*elbv2.Options)) (*elbv2.SetRulePrioritiesOutput, error)
	AddTags(ctx context.Context, in *elbv2.AddTagsInput, opts ...func(*elbv2.Options)) (*elbv2.AddTagsOutput, error)
	RemoveTags(ctx context.Context, in *elbv2.RemoveTagsInput, opts ...func(*elbv2.Options)) (*elbv2.RemoveTagsOutput, error)
}

// ec2API is the part of the EC2 client the deployer calls: the ALB's security group, its tags,
// the Elastic IPs of NLB subnet mappings, and the rules on members' security groups.
type ec2API interface {
	DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeSecurityGroupRules(ctx context.Context, in *ec2.DescribeSecurityGroupRulesInput, opts ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupRulesOutput, error)
	DescribeAddresses(ctx context.Context, in *ec2.DescribeAddressesInput, opts ...func(*ec2.Options)) (*ec2.DescribeAddressesOutput, error)
	CreateSecurityGroup(ctx context.Context, in *ec2.CreateSecurityGroupInput, opts ...func(*ec2.Options)) (*ec2.CreateSecurityGroupOutput, error)
	DeleteSecurityGroup(ctx context.Context, in *ec2.DeleteSecurityGroupInput, opts ...func(*ec2.Options)) (*ec2.DeleteSecurityGroupOutput, error)
	AuthorizeSecurityGroupIngress(ctx context.Context, in *ec2.AuthorizeSecurityGroupIngressInput, opts ...func(*ec2.Options)) (*ec2.AuthorizeSecurityGroupIngressOutput, error)
	RevokeSecurityGroupIngress(ctx context.Context, in *ec2.RevokeSecurityGroupIngressInput, opts ...func(*ec2.Options)) (*ec2.RevokeSecurityGroupIngressOutput, error)
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, opts ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	DeleteTags(ctx context.Context, in *ec2.DeleteTagsInput, opts ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error)
}

// acmAPI is the part of the ACM client the deployer calls: certificates imported from listener
// Secrets.
type acmAPI interface {
	ListCertificates(ctx context.Context, in *acm.ListCertificatesInput, opts ...func(*acm.Options)) (*acm.ListCertificatesOutput, error)
	ListTagsForCertificate(ctx context.Context, in *acm.ListTagsForCertificateInput, opts ...func(*acm.Options)) (*acm.ListTagsForCertificateOutput, error)
	DescribeCertificate(ctx context.Context, in *acm.DescribeCertificateInput, opts ...func(*acm.Options)) (*acm.DescribeCertificateOutput, error)
	ImportCertificate(ctx context.Context, in *acm.ImportCertificateInput, opts ...func(*acm.Options)) (*acm.ImportCertificateOutput, error)
	DeleteCertificate(ctx context.Context, in *acm.DeleteCertificateInput, opts ...func(*acm.Options)) (*acm.DeleteCertificateOutput, error)
	AddTagsToCertificate(ctx context.Context, in *acm.AddTagsToCertificateInput, opts ...func(*acm.Options)) (*acm.AddTagsToCertificateOutput, error)
	RemoveTagsFromCertificate(ctx context.Context, in *acm.RemoveTagsFromCertificateInput, opts ...func(*acm.Options)) (*acm.RemoveTagsFromCertificateOutput, error)
}

// The real clients satisfy the interfaces.
var (
	_ elbAPI = (*elbv2.Client)(nil)
	_ ec2API = (*ec2.Client)(nil)
	_ acmAPI = (*acm.Client)(nil)
)
