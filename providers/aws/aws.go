package aws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Options configure the provider.
type Options struct {
	// Fleet is this operator's fleet ID (TagFleet): only resources of this fleet are seen.
	Fleet string
	// Defaults fill what a class leaves unset (the operator's --aws-* flags: region, endpoint,
	// credentials); LoadBalancer Services of class fleetgate.dev/aws-nlb use them alone.
	Defaults v1alpha1.AWSOptions
	// Secrets reads the data of a Secret holding static keys.
	Secrets func(ctx context.Context, namespace, name string) (map[string][]byte, error)
	// Classes returns the aws section of every GatewayClassConfig of provider aws, so that List
	// looks for orphans in every account in use, not only the default one.
	Classes func(ctx context.Context) ([]v1alpha1.AWSOptions, error)
	// QPS and Burst bound the calls to each account and region; MaxAttempts and MaxBackoff tune
	// the SDK's retries on throttling and 5xx. Zero values take the defaults.
	QPS         float64
	Burst       int
	MaxAttempts int
	MaxBackoff  time.Duration
	Registerer  prometheus.Registerer
	Log         logr.Logger
	// Members returns the spec of every MemberCluster by name (ir.Endpoint.Cluster): the security
	// groups of members that name some (spec.provider.aws) get rules admitting the load balancers.
	// Nil adds no rules.
	Members func(ctx context.Context) (map[string]v1alpha1.MemberClusterSpec, error)
	// Records keep the accounts of members' security groups the provider put rules in, for
	// SweepMembers; nil keeps none (rules then follow specs only while they name the account).
	Records MemberRecords
	// Namespace is the operator's, the only one a member's credentials Secret may be in.
	Namespace string
	// Proxies serve the HTTP and HTTPS listeners of network load balancers; nil refuses them.
	Proxies Proxies
	// Probes finds backends' readiness probes, which health checks follow where the class names
	// no path; nil keeps AWS's defaults.
	Probes providers.ReadinessProbes
	// HTTPClient makes the SDK's requests; nil is the SDK's own.
	HTTPClient awssdk.HTTPClient
}

// Provider is the AWS ELBv2 provider.
type Provider struct {
	o        Options
	accounts *accounts

	mu sync.Mutex
	// deployers keeps one deployer per account (by accountKey) with the clients it was made of,
	// so that its caches outlive an Ensure; new clients (rotated keys) get a new one.
	deployers map[string]accountDeployer

	// sweeping is held by SweepMembers, and shared by member rule writes.
	sweeping sync.RWMutex
	recMu    sync.Mutex
	// recorded are the accounts (by accountKey) known to be in each member's record.
	recorded map[string]map[string]bool
}

type accountDeployer struct {
	clients  *clients
	deployer *deployer
}

// New returns the provider.
func New(o Options) (*Provider, error) {
	if o.Fleet == "" {
		return nil, errors.New("aws provider: a fleet ID is required")
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	a := newAccounts(accountOptions{Secrets: o.Secrets, QPS: o.QPS, Burst: o.Burst, MaxAttempts: o.MaxAttempts,
		MaxBackoff: o.MaxBackoff, Registerer: o.Registerer, HTTPClient: o.HTTPClient, Log: o.Log})
	return &Provider{o: o, accounts: a, deployers: map[string]accountDeployer{}, recorded: map[string]map[string]bool{}}, nil
}

// Capabilities decodes the class's aws section and says what its load balancer type expresses.
func (p *Provider) Capabilities(params json.RawMessage) (providers.Capabilities, error) {
	o, err := decodeOptions(params, p.o.Defaults)
	if err != nil {
		return providers.Capabilities{}, err
	}
	c := capabilitiesOf(o)
	if o.LoadBalancerType == v1alpha1.AWSNetwork && p.o.Proxies != nil {
		// HTTP and HTTPS go through the proxies, which express everything.
		full := providers.FullCapabilities()
		c.Proxied = &full
	}
	return c, nil
}

// Ensure builds lb's Stack and deploys it, or only plans it in a dry run. AWS refusing the
// account's credentials or permissions is a *providers.CredentialsError.
func (p *Provider) Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	o, err := decodeOptions(lb.Parameters, p.o.Defaults)
	if err != nil {
		return providers.Status{Reason: providers.ReasonInvalid, Message: err.Error()}, nil
	}
	// Refused before any AWS call; Build refuses it too, for Plan.
	if _, err := annotationTags(lb.Annotations); err != nil {
		return providers.Status{Reason: providers.ReasonInvalid, Message: err.Error()}, nil
	}
	st, err := p.ensure(ctx, lb, o)
	if err != nil {
		return st, credentialsError(err, accountKey(o))
	}
	if st.Reason != providers.ReasonInvalid {
		st.Account = accountKey(o) // deployed or planned: its calls went through
	}
	return st, nil
}

func (p *Provider) ensure(ctx context.Context, lb *providers.LoadBalancer, o v1alpha1.AWSOptions) (providers.Status, error) {
	proxies, err := p.runProxies(ctx, lb, o)
	if err != nil {
		return providers.Status{}, err
	}
	d, stack, err := p.prepare(ctx, lb, o)
	if invalid := (*invalidError)(nil); errors.As(err, &invalid) {
		return providers.Status{Reason: providers.ReasonInvalid, Message: invalid.Error()}, nil
	}
	if err != nil {
		return providers.Status{}, err
	}
	if stack.DryRun {
		calls, err := p.plan(ctx, d, stack)
		if err != nil {
			return providers.Status{}, err
		}
		return providers.Status{Reason: providers.ReasonPending, Message: providers.PlanSummary(calls)}, nil
	}
	dep, err := d.Deploy(ctx, stack)
	if refused := (*ReplacementRefusedError)(nil); errors.As(err, &refused) {
		return providers.Status{Reason: providers.ReasonInvalid, Message: refused.Error()}, nil
	}
	if err != nil {
		return providers.Status{}, err
	}
	if err := p.syncMembers(ctx, &executor{}, stack, dep.SecurityGroupID); err != nil {
		return providers.Status{}, err
	}
	st := status(dep, stack)
	if proxies == nil {
		// The load balancer sends the proxies nothing (any more): they go.
		if err := p.removeProxies(ctx, lb); err != nil {
			return providers.Status{}, err
		}
		return st, nil
	}
	// The proxies do the routing: they must acknowledge the config, and be ready, too.
	st.Direct = false
	if st.Ready && !proxies.Ready {
		st.Ready, st.Reason, st.Message = false, proxies.Reason, "proxies behind the load balancer: "+proxies.Message
	}
	return st, nil
}

// Plan returns every call Ensure would make to bring the live account to lb's model, dry run or
// not, making no mutating call (`fleetgate plan`). An empty plan means in sync.
func (p *Provider) Plan(ctx context.Context, lb *providers.LoadBalancer) ([]Call, error) {
	o, err := decodeOptions(lb.Parameters, p.o.Defaults)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", lb.Gateway, err)
	}
	d, stack, err := p.prepare(ctx, lb, o)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", lb.Gateway, err)
	}
	calls, err := p.plan(ctx, d, stack)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", lb.Gateway, err)
	}
	return calls, nil
}

// invalidError is a model the provider cannot build: a status for its owner, not a retry.
type invalidError struct{ err error }

func (e *invalidError) Error() string { return e.err.Error() }
func (e *invalidError) Unwrap() error { return e.err }

// prepare reaches the account and network of lb (with its decoded options o) and builds its
// Stack: what Ensure and Plan share.
func (p *Provider) prepare(ctx context.Context, lb *providers.LoadBalancer, o v1alpha1.AWSOptions) (*deployer, *Stack, error) {
	d, cl, err := p.deployer(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	if o.LoadBalancerType == v1alpha1.AWSNetwork && proxied(lb) {
		if p.o.Proxies == nil {
			return nil, nil, &invalidError{errNoProxies}
		}
		eps, err := p.o.Proxies.Endpoints(ctx, proxyModel(lb))
		if err != nil {
			return nil, nil, fmt.Errorf("finding the proxies behind the network load balancer: %w", err)
		}
		lb = throughProxies(lb, eps)
	}
	net, err := cl.network(ctx, o, string(o.LoadBalancerType), lb.Clusters)
	if err != nil {
		return nil, nil, err
	}
	net.Probes = p.readinessProbes(ctx, lb)
	stack, err := Build(lb, o, net, p.o.Fleet)
	if err != nil {
		return nil, nil, &invalidError{err}
	}
	if stack.Members, err = p.memberAccess(ctx, stack, lb, net, o); err != nil {
		return nil, nil, err
	}
	return d, stack, nil
}

// status reports a deployed stack: the DNS name (and static addresses) once ELBv2 says active.
func status(dep Deployed, s *Stack) providers.Status {
	st := providers.Status{Direct: true, Ready: dep.Ready, Reason: providers.ReasonProgrammed}
	if dep.DNSName != "" {
		st.Addresses = append(st.Addresses, providers.Address{Type: providers.AddressTypeHostname, Value: dep.DNSName})
	}
	for _, ip := range dep.Addresses {
		st.Addresses = append(st.Addresses, providers.Address{Type: providers.AddressTypeIPAddress, Value: ip})
	}
	st.Addresses = providers.SortAddresses(st.Addresses)
	if !dep.Ready {
		st.Reason, st.Message = providers.ReasonPending, fmt.Sprintf("load balancer %s is %s", s.LoadBalancer.Name, dep.State)
	}
	if len(s.Notes) > 0 {
		st.Message = strings.TrimPrefix(st.Message+"; "+strings.Join(s.Notes, "; "), "; ")
	}
	return st
}

// Delete removes every resource of lb's gateway, unless members outside lb.Clusters still hold
// the gateway: one load balancer serves them all, and their next Ensure narrows it.
func (p *Provider) Delete(ctx context.Context, lb *providers.LoadBalancer) error {
	o, err := decodeOptions(lb.Parameters, p.o.Defaults)
	if err != nil {
		// The class changed into something invalid: its resources are still where the defaults say.
		o, err = decodeOptions(nil, p.o.Defaults)
		if err != nil {
			return fmt.Errorf("deleting %s: %w", lb.Gateway, err)
		}
	}
	d, _, err := p.deployer(ctx, o)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", lb.Gateway, err)
	}
	owned, err := d.List(ctx)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", lb.Gateway, err)
	}
	shared := slices.ContainsFunc(owned, func(ow Owned) bool {
		return ow.Gateway == lb.Gateway && slices.ContainsFunc(ow.Clusters, func(c string) bool { return !slices.Contains(lb.Clusters, c) })
	})
	if !shared {
		// Member rules first: one may reference the load balancer's security group, which EC2
		// does not delete while it is referenced.
		if err := p.deleteMembers(ctx, o, providers.GatewayID(lb.Gateway)); err != nil {
			return fmt.Errorf("deleting %s: %w", lb.Gateway, err)
		}
		if err := d.Delete(ctx, providers.GatewayID(lb.Gateway)); err != nil {
			return fmt.Errorf("deleting %s: %w", lb.Gateway, err)
		}
	}
	// The proxies of the clusters that let go of the gateway go with them (none for an ALB).
	if p.o.Proxies != nil {
		if err := p.o.Proxies.Delete(ctx, proxyModel(lb)); err != nil {
			return fmt.Errorf("deleting the proxies of %s: %w", lb.Gateway, err)
		}
	}
	return nil
}

// List finds every gateway of this fleet with resources in any account in use.
func (p *Provider) List(ctx context.Context) ([]providers.LoadBalancer, error) {
	classes, err := p.classes(ctx)
	if err != nil {
		return nil, err
	}
	members, err := p.members(ctx)
	if err != nil {
		return nil, err
	}
	found := map[string]*providers.LoadBalancer{}
	seen, seenMembers := map[string]bool{}, map[string]bool{}
	var errs []error
	for _, c := range classes {
		d, cl, err := p.deployer(ctx, c.o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[cl.Account] {
			continue
		}
		seen[cl.Account] = true
		owned, err := d.List(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, ow := range owned {
			if _, dup := found[ow.Gateway]; dup {
				continue
			}
			ns, name := providers.SplitKey(ow.Gateway)
			found[ow.Gateway] = &providers.LoadBalancer{Gateway: ow.Gateway, Namespace: ns, Name: name,
				Provider: string(v1alpha1.ProviderAWS), Clusters: ow.Clusters, Parameters: c.raw}
		}
	}
	// After the load balancers: a gateway found by them keeps its clusters.
	for _, c := range classes {
		errs = append(errs, p.listMembers(ctx, members, c.o, c.raw, seenMembers, found))
	}
	return providers.Listed(found), errors.Join(errs...)
}

// classes are the defaults and every aws class, decoded; invalid ones, which never made
// anything, are left out.
func (p *Provider) classes(ctx context.Context) ([]decodedClass, error) {
	classes := []v1alpha1.AWSOptions{{}}
	if p.o.Classes != nil {
		more, err := p.o.Classes(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the aws classes: %w", err)
		}
		classes = append(classes, more...)
	}
	var out []decodedClass
	for _, c := range classes {
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("encoding class options: %w", err)
		}
		o, err := decodeOptions(raw, p.o.Defaults)
		if err != nil {
			continue
		}
		out = append(out, decodedClass{o, raw})
	}
	return out, nil
}

func (p *Provider) deployer(ctx context.Context, o v1alpha1.AWSOptions) (*deployer, *clients, error) {
	cl, err := p.accounts.clients(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if ad, ok := p.deployers[cl.Account]; ok && ad.clients == cl {
		return ad.deployer, cl, nil
	}
	// A new deployer is rare (an account's first use, rotated keys): the time to drop the ones
	// of accounts that idled out, with their caches.
	for key, ad := range p.deployers {
		if !p.accounts.current(ad.clients) {
			delete(p.deployers, key)
		}
	}
	d := newDeployer(cl.ELB, cl.EC2, cl.ACM, p.o.Fleet, p.o.Log)
	p.deployers[cl.Account] = accountDeployer{clients: cl, deployer: d}
	return d, cl, nil
}
