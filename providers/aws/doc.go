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
//     before a delete;
//   - member records (members_records.go): specs lead only to the accounts members name now, so
//     before its first rule in an account the provider records that account on the MemberCluster
//     (MemberRecords: an annotation and a finalizer, metadata the operator owns, which survive a
//     restart and a restore from backup where status would not). SweepMembers, run at start, on
//     member changes and periodically, revokes this fleet's rules, of every gateway, on the groups
//     of recorded accounts that no live member names there, then forgets the accounts a member's
//     spec no longer leads to; the last one releases the finalizer, so a deleted member's rules go
//     first. It excludes Ensure's member rule writes while it runs, so an account is never
//     forgotten while a rule is being made in it. Groups dropped within an account that others
//     still name are left to the gateways' Ensure, which revokes each gateway's unwanted rules.
//
// Every resource carries the ownership tags (TagManagedBy, TagFleet, TagGateway, TagResource) and
// is found again by them alone, never by name, so nothing leaks when names or specs change.
package aws
