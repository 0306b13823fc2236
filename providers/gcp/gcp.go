package gcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/api/option"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Options configure the provider.
type Options struct {
	// Fleet is this operator's fleet ID: only resources of this fleet are seen.
	Fleet string
	// Defaults fill what a class leaves unset (the operator's --gcp-* flags); LoadBalancer
	// Services of class fleetgate.dev/gcp use them alone.
	Defaults v1alpha1.GCPOptions
	// Secrets reads the data of a Secret holding a service account key.
	Secrets func(ctx context.Context, namespace, name string) (map[string][]byte, error)
	// Classes returns the gcp section of every GatewayClassConfig of provider gcp, so that List
	// looks for orphans in every project and region in use.
	Classes func(ctx context.Context) ([]v1alpha1.GCPOptions, error)
	// Members returns the spec of every MemberCluster by name: the VPC network and zones of
	// their endpoints. Nil knows none (the class's network; endpoints need their own zone).
	Members func(ctx context.Context) (map[string]v1alpha1.MemberClusterSpec, error)
	// Probes finds backends' readiness probes, which health checks follow where the class names
	// no path; nil keeps "/".
	Probes providers.ReadinessProbes
	// ClientOptions are added to the options of every account's transport and clients (tests: an
	// endpoint without authentication); never WithHTTPClient, which would bypass the transport.
	ClientOptions []option.ClientOption
	// Retries of each call; zero is DefaultRetries.
	Retries Retries
	// Registerer gets the compute API metrics; nil registers them nowhere.
	Registerer prometheus.Registerer
	Log        logr.Logger
}

// Provider is the Cloud Load Balancing provider.
type Provider struct {
	o        Options
	accounts *accounts
	normal   *normalForms
}

// New returns the provider.
func New(o Options) (*Provider, error) {
	if o.Fleet == "" {
		return nil, errors.New("gcp provider: a fleet ID is required")
	}
	if o.Retries == (Retries{}) {
		o.Retries = DefaultRetries()
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	return &Provider{o: o, accounts: newAccounts(o.Secrets, o.ClientOptions, o.Retries, o.Registerer), normal: newNormalForms()}, nil
}

// Close closes the clients of every account.
func (p *Provider) Close() { p.accounts.close() }

// Capabilities decodes the class's gcp section and says what its load balancer type expresses.
func (p *Provider) Capabilities(params json.RawMessage) (providers.Capabilities, error) {
	o, err := decodeOptions(params, p.o.Defaults)
	if err != nil {
		return providers.Capabilities{}, err
	}
	return capabilitiesOf(o), nil
}

// Ensure builds lb's Stack and deploys it, or only plans it in a dry run.
func (p *Provider) Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	o, err := decodeOptions(lb.Parameters, p.o.Defaults)
	if err != nil {
		return providers.Status{Reason: providers.ReasonInvalid, Message: err.Error()}, nil
	}
	if lb.Annotations[annotationDryRun] == "true" {
		o.DryRun = true
	}
	d, account, err := p.deployer(ctx, o)
	if err != nil {
		return providers.Status{}, credentialsError(err, account)
	}
	env, err := p.env(ctx, lb)
	if err != nil {
		return providers.Status{}, err // the hub did not answer: retried
	}
	s, err := Build(lb, o, env, p.o.Fleet)
	if err != nil {
		return providers.Status{Reason: providers.ReasonInvalid, Message: err.Error()}, nil
	}
	dep, err := d.Deploy(ctx, s)
	if err != nil {
		return providers.Status{}, credentialsError(err, account)
	}
	st := status(dep, s)
	st.Account = account
	return st, nil
}

// annotationDryRun on a Gateway's infrastructure asks for a dry run of its load balancer alone.
const annotationDryRun = "fleetgate.dev/dry-run"

// Plan returns every mutating call Ensure would make now, making none (`fleetgate plan`).
func (p *Provider) Plan(ctx context.Context, lb *providers.LoadBalancer) ([]Call, error) {
	o, err := decodeOptions(lb.Parameters, p.o.Defaults)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", lb.Gateway, err)
	}
	d, _, err := p.deployer(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", lb.Gateway, err)
	}
	env, err := p.env(ctx, lb)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", lb.Gateway, err)
	}
	s, err := Build(lb, o, env, p.o.Fleet)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", lb.Gateway, err)
	}
	s.DryRun = true
	dep, err := d.Deploy(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", lb.Gateway, err)
	}
	return dep.Calls, nil
}

// env is what Build needs to know of the fleet: the members' placement and the backends' probes.
func (p *Provider) env(ctx context.Context, lb *providers.LoadBalancer) (Env, error) {
	members := map[string]Member{}
	if p.o.Members != nil {
		specs, err := p.o.Members(ctx)
		if err != nil {
			return Env{}, fmt.Errorf("reading the member clusters: %w", err)
		}
		for name, m := range specs {
			members[name] = Member{Network: m.Provider.Network, NetworkTags: m.Provider.NetworkTags, Zones: m.Zones}
		}
	}
	probes := providers.BackendProbes(ctx, p.o.Probes, lb.Routing, maxHealthCheckPathLen, p.o.Log)
	return Env{Members: members, Probes: probes}, nil
}

// status reports a deployed Stack: its addresses once the forwarding rules exist.
func status(dep Deployed, s *Stack) providers.Status {
	st := providers.Status{Direct: true, Ready: dep.Ready, Reason: providers.ReasonProgrammed}
	for _, ip := range dep.Addresses {
		st.Addresses = append(st.Addresses, providers.Address{Type: providers.AddressTypeIPAddress, Value: ip})
	}
	st.Addresses = providers.SortAddresses(st.Addresses)
	switch {
	case s.DryRun:
		st.Ready, st.Reason, st.Message = false, providers.ReasonPending, providers.PlanSummary(dep.Calls)
	case !slices.ContainsFunc(s.Resources, func(r Resource) bool { return r.Kind == KindForwardingRule }):
		st.Ready, st.Reason, st.Message = false, providers.ReasonNoResources, "no listener this load balancer type can serve"
	case len(st.Addresses) == 0:
		st.Ready, st.Reason, st.Message = false, providers.ReasonAddressNotAssigned, "the forwarding rules have no address yet"
	}
	if len(s.Notes) > 0 {
		st.Message = strings.TrimPrefix(st.Message+"; "+strings.Join(s.Notes, "; "), "; ")
	}
	return st
}

// Delete removes every resource of lb's gateway, unless members outside lb.Clusters still hold
// it: one load balancer serves them all, and their next Ensure narrows it.
func (p *Provider) Delete(ctx context.Context, lb *providers.LoadBalancer) error {
	o, err := decodeOptions(lb.Parameters, p.o.Defaults)
	if err != nil {
		// The class changed into something invalid: its resources are where the defaults say.
		if o, err = decodeOptions(nil, p.o.Defaults); err != nil {
			return fmt.Errorf("deleting %s: %w", lb.Gateway, err)
		}
	}
	d, account, err := p.deployer(ctx, o)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", lb.Gateway, credentialsError(err, account))
	}
	prefix := gatewayPrefix(p.o.Fleet, lb.Gateway)
	owned, err := d.observe(ctx, prefix)
	if err != nil {
		return fmt.Errorf("deleting %s: %w", lb.Gateway, credentialsError(err, account))
	}
	if slices.ContainsFunc(holders(slices.Collect(maps.Values(owned))), func(c string) bool { return !slices.Contains(lb.Clusters, c) }) {
		return nil // still held elsewhere
	}
	if err := d.cleanup(ctx, owned, nil, &executor{}); err != nil {
		return fmt.Errorf("deleting %s: %w", lb.Gateway, credentialsError(err, account))
	}
	return nil
}

// List finds every gateway of this fleet with resources in any project and region in use.
func (p *Provider) List(ctx context.Context) ([]providers.LoadBalancer, error) {
	classes := []v1alpha1.GCPOptions{{}}
	if p.o.Classes != nil {
		more, err := p.o.Classes(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the gcp classes: %w", err)
		}
		classes = append(classes, more...)
	}
	found := map[string]*providers.LoadBalancer{}
	seen := map[string]bool{}
	var errs []error
	for _, c := range classes {
		raw, err := json.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("encoding class options: %w", err)
		}
		o, err := decodeOptions(raw, p.o.Defaults)
		if err != nil {
			continue // an invalid class never made anything
		}
		d, account, err := p.deployer(ctx, o)
		if err != nil {
			errs = append(errs, credentialsError(err, account))
			continue
		}
		if seen[account] {
			continue
		}
		seen[account] = true
		owned, err := d.observe(ctx, fleetPrefix(p.o.Fleet))
		if err != nil {
			errs = append(errs, credentialsError(err, account))
			continue
		}
		byGateway := map[string][]*live{}
		for _, l := range owned {
			byGateway[l.owner.Gateway] = append(byGateway[l.owner.Gateway], l)
		}
		for gw, ls := range byGateway {
			lb, ok := found[gw]
			if !ok {
				ns, name := providers.SplitKey(gw)
				lb = &providers.LoadBalancer{Gateway: gw, Namespace: ns, Name: name,
					Provider: string(v1alpha1.ProviderGCP), Parameters: raw}
				found[gw] = lb
			}
			lb.Clusters = append(lb.Clusters, holders(ls)...)
		}
	}
	return providers.Listed(found), errors.Join(errs...)
}

func (p *Provider) deployer(ctx context.Context, o v1alpha1.GCPOptions) (*deployer, string, error) {
	c, account, err := p.accounts.clients(ctx, o)
	if err != nil {
		return nil, account, err
	}
	return &deployer{c: c, fleet: p.o.Fleet, normal: p.normal, metrics: p.accounts.metrics, log: p.o.Log}, account, nil
}
