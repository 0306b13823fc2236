package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/acm"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// elbAPI is the part of the ELBv2 client the deployer calls; *elasticloadbalancingv2.Client
// satisfies it.
type elbAPI interface {
	DescribeLoadBalancers(ctx context.Context, in *elb.DescribeLoadBalancersInput, opts ...func(*elb.Options)) (*elb.DescribeLoadBalancersOutput, error)
	DescribeLoadBalancerAttributes(ctx context.Context, in *elb.DescribeLoadBalancerAttributesInput, opts ...func(*elb.Options)) (*elb.DescribeLoadBalancerAttributesOutput, error)
	DescribeTags(ctx context.Context, in *elb.DescribeTagsInput, opts ...func(*elb.Options)) (*elb.DescribeTagsOutput, error)
	DescribeTargetGroups(ctx context.Context, in *elb.DescribeTargetGroupsInput, opts ...func(*elb.Options)) (*elb.DescribeTargetGroupsOutput, error)
	DescribeTargetGroupAttributes(ctx context.Context, in *elb.DescribeTargetGroupAttributesInput, opts ...func(*elb.Options)) (*elb.DescribeTargetGroupAttributesOutput, error)
	DescribeTargetHealth(ctx context.Context, in *elb.DescribeTargetHealthInput, opts ...func(*elb.Options)) (*elb.DescribeTargetHealthOutput, error)
	DescribeListeners(ctx context.Context, in *elb.DescribeListenersInput, opts ...func(*elb.Options)) (*elb.DescribeListenersOutput, error)
	DescribeListenerCertificates(ctx context.Context, in *elb.DescribeListenerCertificatesInput, opts ...func(*elb.Options)) (*elb.DescribeListenerCertificatesOutput, error)
	DescribeRules(ctx context.Context, in *elb.DescribeRulesInput, opts ...func(*elb.Options)) (*elb.DescribeRulesOutput, error)

	CreateLoadBalancer(ctx context.Context, in *elb.CreateLoadBalancerInput, opts ...func(*elb.Options)) (*elb.CreateLoadBalancerOutput, error)
	DeleteLoadBalancer(ctx context.Context, in *elb.DeleteLoadBalancerInput, opts ...func(*elb.Options)) (*elb.DeleteLoadBalancerOutput, error)
	ModifyLoadBalancerAttributes(ctx context.Context, in *elb.ModifyLoadBalancerAttributesInput, opts ...func(*elb.Options)) (*elb.ModifyLoadBalancerAttributesOutput, error)
	SetSecurityGroups(ctx context.Context, in *elb.SetSecurityGroupsInput, opts ...func(*elb.Options)) (*elb.SetSecurityGroupsOutput, error)
	SetSubnets(ctx context.Context, in *elb.SetSubnetsInput, opts ...func(*elb.Options)) (*elb.SetSubnetsOutput, error)
	CreateTargetGroup(ctx context.Context, in *elb.CreateTargetGroupInput, opts ...func(*elb.Options)) (*elb.CreateTargetGroupOutput, error)
	DeleteTargetGroup(ctx context.Context, in *elb.DeleteTargetGroupInput, opts ...func(*elb.Options)) (*elb.DeleteTargetGroupOutput, error)
	ModifyTargetGroup(ctx context.Context, in *elb.ModifyTargetGroupInput, opts ...func(*elb.Options)) (*elb.ModifyTargetGroupOutput, error)
	ModifyTargetGroupAttributes(ctx context.Context, in *elb.ModifyTargetGroupAttributesInput, opts ...func(*elb.Options)) (*elb.ModifyTargetGroupAttributesOutput, error)
	RegisterTargets(ctx context.Context, in *elb.RegisterTargetsInput, opts ...func(*elb.Options)) (*elb.RegisterTargetsOutput, error)
	DeregisterTargets(ctx context.Context, in *elb.DeregisterTargetsInput, opts ...func(*elb.Options)) (*elb.DeregisterTargetsOutput, error)
	CreateListener(ctx context.Context, in *elb.CreateListenerInput, opts ...func(*elb.Options)) (*elb.CreateListenerOutput, error)
	ModifyListener(ctx context.Context, in *elb.ModifyListenerInput, opts ...func(*elb.Options)) (*elb.ModifyListenerOutput, error)
	DeleteListener(ctx context.Context, in *elb.DeleteListenerInput, opts ...func(*elb.Options)) (*elb.DeleteListenerOutput, error)
	AddListenerCertificates(ctx context.Context, in *elb.AddListenerCertificatesInput, opts ...func(*elb.Options)) (*elb.AddListenerCertificatesOutput, error)
	RemoveListenerCertificates(ctx context.Context, in *elb.RemoveListenerCertificatesInput, opts ...func(*elb.Options)) (*elb.RemoveListenerCertificatesOutput, error)
	CreateRule(ctx context.Context, in *elb.CreateRuleInput, opts ...func(*elb.Options)) (*elb.CreateRuleOutput, error)
	ModifyRule(ctx context.Context, in *elb.ModifyRuleInput, opts ...func(*elb.Options)) (*elb.ModifyRuleOutput, error)
	DeleteRule(ctx context.Context, in *elb.DeleteRuleInput, opts ...func(*elb.Options)) (*elb.DeleteRuleOutput, error)
	SetRulePriorities(ctx context.Context, in *elb.SetRulePrioritiesInput, opts ...func(*elb.Options)) (*elb.SetRulePrioritiesOutput, error)
	AddTags(ctx context.Context, in *elb.AddTagsInput, opts ...func(*elb.Options)) (*elb.AddTagsOutput, error)
	RemoveTags(ctx context.Context, in *elb.RemoveTagsInput, opts ...func(*elb.Options)) (*elb.RemoveTagsOutput, error)
}

// ec2API is the part of the EC2 client the deployer calls: the ALB's security group, its tags,
// and the Elastic IPs of NLB subnet mappings.
type ec2API interface {
	DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
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
	_ elbAPI = (*elb.Client)(nil)
	_ ec2API = (*ec2.Client)(nil)
	_ acmAPI = (*acm.Client)(nil)
)
