package v1alpha1

// FinalizerLoadBalancer holds Gateways, Ingresses and LoadBalancer Services of fleetgate classes
// until the provider deleted what was built for them, so that a deletion survives an operator
// restart.
const FinalizerLoadBalancer = "fleetgate.dev/load-balancer"

// FinalizerMember holds every MemberCluster but the hub's own until fleetgate released what it
// made for the member: the load balancers and DNS records of the gateways only it held, and (while
// it answers) the finalizers and statuses fleetgate wrote on its objects.
const FinalizerMember = "fleetgate.dev/member"

// FinalizerMemberRules holds a MemberCluster whose security groups may hold fleetgate's member
// rules (AnnotationAWSRulesIn names the accounts) until the aws provider revoked them.
const FinalizerMemberRules = "fleetgate.dev/aws-member-rules"

// AnnotationAWSRulesIn on a MemberCluster records, as a JSON list of AWSOptions (region, endpoint,
// credentials), the accounts where the aws provider may have put rules on the member's security
// groups: written before the first rule is made there, dropped once no spec names that account for
// the member and its rules there are revoked. It is metadata, not status, so that it survives
// what status does not (a restore from backup, another status writer) and the operator finds the
// old account after a spec change it did not see.
const AnnotationAWSRulesIn = "fleetgate.dev/aws-rules-in"
