// Package aws is the provider of aws classes: an ELBv2 load balancer per gateway, an ALB
// (application) or an NLB (network), in the account and region the class's GatewayClassConfig
// names.
//
// It works as the AWS Load Balancer Controller does, split in two:
//   - build (build_*.go, one file per AWS resource): a pure function from the provider-neutral
//     model (providers.LoadBalancer with its ir.Config routing), the class's options and the
//     discovered network to a Stack, the desired resources; validate.go checks every value against
//     the AWS API reference, since moto (the test server) does not;
//   - deploy (deploy*.go): lists what exists by ownership tags, diffs it against the Stack, and
//     creates, updates and deletes in dependency order (security group, target groups, load
//     balancer, listeners, rules, target registrations), cleaning up in reverse;
//   - member rules (build_memberrules.go, deploy_memberrules.go, members.go): ingress rules on the
//     security groups MemberClusters name, in each member's account, that admit the load balancer
//     to the targets there; made after the deploy (they may name its security group), revoked
//     before a delete.
//
// Every resource carries the ownership tags (TagManagedBy, TagFleet, TagGateway, TagResource) and
// is found again by them alone, never by name, so nothing leaks when names or specs change.
package aws
