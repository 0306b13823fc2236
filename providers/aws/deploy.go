package aws

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/go-logr/logr"
)

// deployer reconciles the AWS resources of gateways with their Stacks, in one account and region
// and for one fleet. It is safe for concurrent use by different gateways, and lives as long as
// the account's clients: its caches of tags serve every gateway of the account.
type deployer struct {
	elb      elbAPI
	ec2      ec2API
	acm      acmAPI
	fleet    string
	log      logr.Logger
	certTags *tagCache
	seen     *seenTags
}

func newDeployer(elb elbAPI, ec2 ec2API, acm acmAPI, fleet string, log logr.Logger) *deployer {
	return &deployer{elb: elb, ec2: ec2, acm: acm, fleet: fleet, log: log,
		certTags: &tagCache{tags: map[string]map[string]string{}}, seen: newSeenTags()}
}

// Deployed is the load balancer as it stands after a Deploy.
type Deployed struct {
	ARN                   string
	DNSName               string
	CanonicalHostedZoneID string
	State                 string
	// Ready: the load balancer is active and every listener of the Stack exists.
	Ready bool
	// Addresses are the Elastic IPs of the subnet mappings (NLB with static addresses).
	Addresses []string
	// SecurityGroupID is the ALB's security group (a placeholder in a dry run), "" for an NLB.
	SecurityGroupID string
	// Calls are the mutating calls made, or for a DryRun Stack the ones that would be.
	Calls []Call
}

// Deploy makes the AWS resources of s.GatewayID what s says, in dependency order, and deletes
// what carries the gateway's tags but is not in s. A DryRun Stack is only planned (see Plan).
//
// Idempotence: every create carries the full tag set in the create call itself, so a resource
// created just before a crash is found by tags at the start of the next Deploy, never duplicated.
func (d *deployer) Deploy(ctx context.Context, s *Stack) (Deployed, error) {
	x := &executor{dry: s.DryRun}
	dep, err := d.run(ctx, s, x)
	dep.Calls = x.calls
	return dep, err
}

// run is the diff and apply shared by Deploy and Plan; x decides whether calls are made.
func (d *deployer) run(ctx context.Context, s *Stack, x *executor) (Deployed, error) {
	obs, err := d.observe(ctx, s.GatewayID, true)
	if err != nil {
		return Deployed{}, err
	}
	st := &state{stack: s, obs: obs, tgARN: map[string]string{}, certARN: map[string]string{}, listenerARN: map[string]string{}}
	if err := st.refuseReplacement(); err != nil {
		return Deployed{}, err // before any call: nothing of the Stack is half applied
	}
	steps := []func(context.Context, *state, *executor) error{
		d.syncSecurityGroup,
		d.syncCertificates,
		d.syncTargetGroups,
		d.syncLoadBalancer,
		d.syncListeners,
		d.syncRules,
		d.syncTargets,
		d.cleanup,
	}
	for _, step := range steps {
		if err := step(ctx, st, x); err != nil {
			return st.deployed, err
		}
	}
	return d.finish(ctx, st)
}

// state is what one run knows: the Stack, what was observed, and the ARNs of the Stack's
// resources as they are found or created (placeholders in a dry run).
type state struct {
	stack *Stack
	obs   *observed

	sgID      string
	certARN   map[string]string // certificate ID → ARN
	tgARN     map[string]string // target group ID → ARN
	tgKeep    map[string]bool   // target group ARNs of the Stack
	tgTargets map[string][]Target
	lbARN     string
	lbCreated bool   // created in this run: it has no listeners yet
	lbGone    string // the ARN of a load balancer deleted to be replaced

	listeners    []liveListener // of the kept load balancer
	listenerARN  map[string]string
	listenerKeep map[string]bool
	staleRules   []*liveRule // ours, not in the Stack: deleted in cleanup
	deployed     Deployed
}

// finish reports the load balancer as it stands.
func (d *deployer) finish(ctx context.Context, st *state) (Deployed, error) {
	dep := st.deployed
	dep.Ready = dep.State == string(elbtypes.LoadBalancerStateEnumActive) && len(st.listenerARN) == len(st.stack.Listeners)
	addrs, err := d.addresses(ctx, st.stack.LoadBalancer.SubnetMappings)
	if err != nil {
		return dep, err
	}
	dep.Addresses = addrs
	dep.SecurityGroupID = st.sgID
	return dep, nil
}

// executor makes mutating calls, or only records them (dry run). Every mutating call of a run
// goes through do, so Plan and Deploy make the same decisions.
type executor struct {
	dry   bool
	calls []Call
}

// do records c and, unless dry, runs f.
func (x *executor) do(c Call, f func() error) error {
	x.calls = append(x.calls, c)
	if x.dry {
		return nil
	}
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", c, err)
	}
	return nil
}

// placeholder stands for the ARN of a resource a dry run would create.
func placeholder(id string) string { return "(new " + id + ")" }

func lbName(l *liveLB) string { return aws.ToString(l.lb.LoadBalancerName) }
