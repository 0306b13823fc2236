package gcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
)

// clients are the compute REST clients of one project and identity. Every call is a method of
// clients keyed by Kind and Scope: the deployer speaks in resources, not in the nineteen clients.
type clients struct {
	project string
	// co are the call options of every call (Retries). The REST clients apply their CallOptions
	// to every method but the paged lists, which get co passed explicitly.
	co []gax.CallOption
	// opTimeout bounds each wait for an operation.
	opTimeout time.Duration

	addresses                *compute.AddressesClient
	globalAddr               *compute.GlobalAddressesClient
	firewalls                *compute.FirewallsClient
	healthChecks             *compute.HealthChecksClient
	regionHealthChecks       *compute.RegionHealthChecksClient
	negs                     *compute.NetworkEndpointGroupsClient
	backendServices          *compute.BackendServicesClient
	regionBackendServices    *compute.RegionBackendServicesClient
	sslCertificates          *compute.SslCertificatesClient
	regionSslCertificates    *compute.RegionSslCertificatesClient
	urlMaps                  *compute.UrlMapsClient
	regionURLMaps            *compute.RegionUrlMapsClient
	targetHTTPProxies        *compute.TargetHttpProxiesClient
	regionTargetHTTPProxies  *compute.RegionTargetHttpProxiesClient
	targetHTTPSProxies       *compute.TargetHttpsProxiesClient
	regionTargetHTTPSProxies *compute.RegionTargetHttpsProxiesClient
	globalForwardingRules    *compute.GlobalForwardingRulesClient
	forwardingRules          *compute.ForwardingRulesClient
	closers                  []func() error
}

// Retries is how each call is retried: on 429 and 5xx (rate limits and backend errors; an
// insert whose first attempt did apply then fails alreadyExists, and the next run finds it),
// MaxAttempts times in all, with jittered exponential backoff from Initial up to Max. Timeout
// bounds each attempt, Operation the wait for a long-running operation to finish.
type Retries struct {
	MaxAttempts  int
	Initial, Max time.Duration
	Timeout      time.Duration
	Operation    time.Duration
}

// DefaultRetries are the retries of the operator.
func DefaultRetries() Retries {
	return Retries{MaxAttempts: 5, Initial: 500 * time.Millisecond, Max: 30 * time.Second, Timeout: time.Minute, Operation: 5 * time.Minute}
}

// callOptions are the call options of every method: the clients' defaults retry reads without
// bound for up to 10 minutes and never retry 429 nor a mutation.
func (r Retries) callOptions() []gax.CallOption {
	return []gax.CallOption{
		gax.WithTimeout(r.Timeout),
		gax.WithRetry(func() gax.Retryer {
			return &boundedRetryer{left: r.MaxAttempts - 1, Retryer: gax.OnHTTPCodes(gax.Backoff{Initial: r.Initial, Max: r.Max, Multiplier: 2},
				http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout)}
		}),
	}
}

type boundedRetryer struct {
	gax.Retryer
	left int
}

func (b *boundedRetryer) Retry(err error) (time.Duration, bool) {
	if b.left <= 0 {
		return 0, false
	}
	b.left--
	return b.Retryer.Retry(err)
}

// setCallOptions gives every method of a client's CallOptions (a pointer to a struct of
// []gax.CallOption fields, one per method) the options opts.
func setCallOptions(callOptions any, opts []gax.CallOption) {
	v := reflect.ValueOf(callOptions).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Type() == reflect.TypeFor[[]gax.CallOption]() {
			f.Set(reflect.ValueOf(opts))
		}
	}
}

// newClients makes every REST client with opts (endpoint, credentials, HTTP client).
func newClients(ctx context.Context, project string, retries Retries, opts ...option.ClientOption) (*clients, error) {
	c := &clients{project: project, opTimeout: cmp.Or(retries.Operation, DefaultRetries().Operation)}
	var errs []error
	mk := func(close func() error, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		c.closers = append(c.closers, close)
	}
	var err error
	c.addresses, err = compute.NewAddressesRESTClient(ctx, opts...)
	mk(closer(c.addresses, err))
	c.globalAddr, err = compute.NewGlobalAddressesRESTClient(ctx, opts...)
	mk(closer(c.globalAddr, err))
	c.firewalls, err = compute.NewFirewallsRESTClient(ctx, opts...)
	mk(closer(c.firewalls, err))
	c.healthChecks, err = compute.NewHealthChecksRESTClient(ctx, opts...)
	mk(closer(c.healthChecks, err))
	c.regionHealthChecks, err = compute.NewRegionHealthChecksRESTClient(ctx, opts...)
	mk(closer(c.regionHealthChecks, err))
	c.negs, err = compute.NewNetworkEndpointGroupsRESTClient(ctx, opts...)
	mk(closer(c.negs, err))
	c.backendServices, err = compute.NewBackendServicesRESTClient(ctx, opts...)
	mk(closer(c.backendServices, err))
	c.regionBackendServices, err = compute.NewRegionBackendServicesRESTClient(ctx, opts...)
	mk(closer(c.regionBackendServices, err))
	c.sslCertificates, err = compute.NewSslCertificatesRESTClient(ctx, opts...)
	mk(closer(c.sslCertificates, err))
	c.regionSslCertificates, err = compute.NewRegionSslCertificatesRESTClient(ctx, opts...)
	mk(closer(c.regionSslCertificates, err))
	c.urlMaps, err = compute.NewUrlMapsRESTClient(ctx, opts...)
	mk(closer(c.urlMaps, err))
	c.regionURLMaps, err = compute.NewRegionUrlMapsRESTClient(ctx, opts...)
	mk(closer(c.regionURLMaps, err))
	c.targetHTTPProxies, err = compute.NewTargetHttpProxiesRESTClient(ctx, opts...)
	mk(closer(c.targetHTTPProxies, err))
	c.regionTargetHTTPProxies, err = compute.NewRegionTargetHttpProxiesRESTClient(ctx, opts...)
	mk(closer(c.regionTargetHTTPProxies, err))
	c.targetHTTPSProxies, err = compute.NewTargetHttpsProxiesRESTClient(ctx, opts...)
	mk(closer(c.targetHTTPSProxies, err))
	c.regionTargetHTTPSProxies, err = compute.NewRegionTargetHttpsProxiesRESTClient(ctx, opts...)
	mk(closer(c.regionTargetHTTPSProxies, err))
	c.globalForwardingRules, err = compute.NewGlobalForwardingRulesRESTClient(ctx, opts...)
	mk(closer(c.globalForwardingRules, err))
	c.forwardingRules, err = compute.NewForwardingRulesRESTClient(ctx, opts...)
	mk(closer(c.forwardingRules, err))
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, fmt.Errorf("making the compute clients: %w", err)
	}
	c.co = retries.callOptions()
	for _, o := range []any{c.addresses.CallOptions, c.globalAddr.CallOptions, c.firewalls.CallOptions, c.healthChecks.CallOptions, c.regionHealthChecks.CallOptions,
		c.negs.CallOptions, c.backendServices.CallOptions, c.regionBackendServices.CallOptions, c.sslCertificates.CallOptions,
		c.regionSslCertificates.CallOptions, c.urlMaps.CallOptions, c.regionURLMaps.CallOptions, c.targetHTTPProxies.CallOptions,
		c.regionTargetHTTPProxies.CallOptions, c.targetHTTPSProxies.CallOptions, c.regionTargetHTTPSProxies.CallOptions,
		c.globalForwardingRules.CallOptions, c.forwardingRules.CallOptions} {
		setCallOptions(o, c.co)
	}
	return c, nil
}

func closer[T interface{ Close() error }](c T, err error) (func() error, error) {
	if err != nil {
		return nil, err
	}
	return c.Close, nil
}

// Close closes every client.
func (c *clients) Close() {
	for _, f := range c.closers {
		_ = f() // an idle HTTP client: nothing to report
	}
}

// opError is an operation that finished with errors. The REST client's Wait returns nil for a
// DONE operation whose error has no HTTP status, so every wait checks the error field itself.
type opError struct {
	op   string
	errs []*computepb.Errors
}

func (e *opError) Error() string {
	var parts []string
	for _, x := range e.errs {
		parts = append(parts, x.GetCode()+": "+x.GetMessage())
	}
	return fmt.Sprintf("operation %s failed: %s", e.op, strings.Join(parts, "; "))
}

// wait returns a function that waits for an operation, at most Retries.Operation, and checks its
// error field: c.wait(ctx)(call(…)).
func (c *clients) wait(ctx context.Context) func(*compute.Operation, error) error {
	return func(op *compute.Operation, err error) error {
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, c.opTimeout)
		defer cancel()
		return waitOp(ctx, op)
	}
}

func waitOp(ctx context.Context, op *compute.Operation) error {
	if err := op.Wait(ctx); err != nil {
		return fmt.Errorf("waiting for operation %s: %w", op.Name(), err)
	}
	if e := op.Proto().GetError(); e != nil && len(e.GetErrors()) > 0 {
		return &opError{op: op.Name(), errs: e.GetErrors()}
	}
	return nil
}

// collect drains an iterator of the compute client.
func collect[T proto.Message](it interface{ Next() (T, error) }) ([]proto.Message, error) {
	var out []proto.Message
	for {
		m, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
}

// list lists the resources of kind k in scope whose names match filter.
func (c *clients) list(ctx context.Context, k Kind, scope Scope, filter string) ([]proto.Message, error) {
	p, f, r := &c.project, &filter, &scope.Region
	g := scope.Region == ""
	switch {
	case k == KindAddress && g:
		return collect(c.globalAddr.List(ctx, &computepb.ListGlobalAddressesRequest{Project: *p, Filter: f}, c.co...))
	case k == KindAddress:
		return collect(c.addresses.List(ctx, &computepb.ListAddressesRequest{Project: *p, Region: *r, Filter: f}, c.co...))
	case k == KindFirewall:
		return collect(c.firewalls.List(ctx, &computepb.ListFirewallsRequest{Project: *p, Filter: f}, c.co...))
	case k == KindHealthCheck && g:
		return collect(c.healthChecks.List(ctx, &computepb.ListHealthChecksRequest{Project: *p, Filter: f}, c.co...))
	case k == KindHealthCheck:
		return collect(c.regionHealthChecks.List(ctx, &computepb.ListRegionHealthChecksRequest{Project: *p, Region: *r, Filter: f}, c.co...))
	case k == KindBackendService && g:
		return collect(c.backendServices.List(ctx, &computepb.ListBackendServicesRequest{Project: *p, Filter: f}, c.co...))
	case k == KindBackendService:
		return collect(c.regionBackendServices.List(ctx, &computepb.ListRegionBackendServicesRequest{Project: *p, Region: *r, Filter: f}, c.co...))
	case k == KindSSLCertificate && g:
		return collect(c.sslCertificates.List(ctx, &computepb.ListSslCertificatesRequest{Project: *p, Filter: f}, c.co...))
	case k == KindSSLCertificate:
		return collect(c.regionSslCertificates.List(ctx, &computepb.ListRegionSslCertificatesRequest{Project: *p, Region: *r, Filter: f}, c.co...))
	case k == KindURLMap && g:
		return collect(c.urlMaps.List(ctx, &computepb.ListUrlMapsRequest{Project: *p, Filter: f}, c.co...))
	case k == KindURLMap:
		return collect(c.regionURLMaps.List(ctx, &computepb.ListRegionUrlMapsRequest{Project: *p, Region: *r, Filter: f}, c.co...))
	case k == KindTargetHTTPProxy && g:
		return collect(c.targetHTTPProxies.List(ctx, &computepb.ListTargetHttpProxiesRequest{Project: *p, Filter: f}, c.co...))
	case k == KindTargetHTTPProxy:
		return collect(c.regionTargetHTTPProxies.List(ctx, &computepb.ListRegionTargetHttpProxiesRequest{Project: *p, Region: *r, Filter: f}, c.co...))
	case k == KindTargetHTTPSProxy && g:
		return collect(c.targetHTTPSProxies.List(ctx, &computepb.ListTargetHttpsProxiesRequest{Project: *p, Filter: f}, c.co...))
	case k == KindTargetHTTPSProxy:
		return collect(c.regionTargetHTTPSProxies.List(ctx, &computepb.ListRegionTargetHttpsProxiesRequest{Project: *p, Region: *r, Filter: f}, c.co...))
	case k == KindForwardingRule && g:
		return collect(c.globalForwardingRules.List(ctx, &computepb.ListGlobalForwardingRulesRequest{Project: *p, Filter: f}, c.co...))
	case k == KindForwardingRule:
		return collect(c.forwardingRules.List(ctx, &computepb.ListForwardingRulesRequest{Project: *p, Region: *r, Filter: f}, c.co...))
	}
	return nil, fmt.Errorf("listing %s: unknown kind", k)
}

// scoped is a listed resource and the scope it lives in.
type scoped struct {
	scope Scope
	msg   proto.Message
}

// listAcross lists the resources of kind k whose names match filter in every region (and, for
// NEGs, every zone) with one aggregated list: what a gateway left in a region its class no
// longer names is found too. Global resources are left to list.
func (c *clients) listAcross(ctx context.Context, k Kind, filter string) ([]scoped, error) {
	p, f := c.project, &filter
	switch k {
	case KindAddress:
		return collectScoped(c.addresses.AggregatedList(ctx, &computepb.AggregatedListAddressesRequest{Project: p, Filter: f}, c.co...),
			func(p compute.AddressesScopedListPair) (string, []*computepb.Address) {
				return p.Key, p.Value.GetAddresses()
			})
	case KindHealthCheck:
		return collectScoped(c.healthChecks.AggregatedList(ctx, &computepb.AggregatedListHealthChecksRequest{Project: p, Filter: f}, c.co...),
			func(p compute.HealthChecksScopedListPair) (string, []*computepb.HealthCheck) {
				return p.Key, p.Value.GetHealthChecks()
			})
	case KindNEG:
		return collectScoped(c.negs.AggregatedList(ctx, &computepb.AggregatedListNetworkEndpointGroupsRequest{Project: p, Filter: f}, c.co...),
			func(p compute.NetworkEndpointGroupsScopedListPair) (string, []*computepb.NetworkEndpointGroup) {
				return p.Key, p.Value.GetNetworkEndpointGroups()
			})
	case KindBackendService:
		return collectScoped(c.backendServices.AggregatedList(ctx, &computepb.AggregatedListBackendServicesRequest{Project: p, Filter: f}, c.co...),
			func(p compute.BackendServicesScopedListPair) (string, []*computepb.BackendService) {
				return p.Key, p.Value.GetBackendServices()
			})
	case KindSSLCertificate:
		return collectScoped(c.sslCertificates.AggregatedList(ctx, &computepb.AggregatedListSslCertificatesRequest{Project: p, Filter: f}, c.co...),
			func(p compute.SslCertificatesScopedListPair) (string, []*computepb.SslCertificate) {
				return p.Key, p.Value.GetSslCertificates()
			})
	case KindURLMap:
		return collectScoped(c.urlMaps.AggregatedList(ctx, &computepb.AggregatedListUrlMapsRequest{Project: p, Filter: f}, c.co...),
			func(p compute.UrlMapsScopedListPair) (string, []*computepb.UrlMap) {
				return p.Key, p.Value.GetUrlMaps()
			})
	case KindTargetHTTPProxy:
		return collectScoped(c.targetHTTPProxies.AggregatedList(ctx, &computepb.AggregatedListTargetHttpProxiesRequest{Project: p, Filter: f}, c.co...),
			func(p compute.TargetHttpProxiesScopedListPair) (string, []*computepb.TargetHttpProxy) {
				return p.Key, p.Value.GetTargetHttpProxies()
			})
	case KindTargetHTTPSProxy:
		return collectScoped(c.targetHTTPSProxies.AggregatedList(ctx, &computepb.AggregatedListTargetHttpsProxiesRequest{Project: p, Filter: f}, c.co...),
			func(p compute.TargetHttpsProxiesScopedListPair) (string, []*computepb.TargetHttpsProxy) {
				return p.Key, p.Value.GetTargetHttpsProxies()
			})
	case KindForwardingRule:
		return collectScoped(c.forwardingRules.AggregatedList(ctx, &computepb.AggregatedListForwardingRulesRequest{Project: p, Filter: f}, c.co...),
			func(p compute.ForwardingRulesScopedListPair) (string, []*computepb.ForwardingRule) {
				return p.Key, p.Value.GetForwardingRules()
			})
	}
	return nil, fmt.Errorf("listing %s across regions: no regional variant", k)
}

// collectScoped drains an aggregated list's pairs (split: a pair's scope key and items), keeping
// the regional and zonal scopes.
func collectScoped[P any, T proto.Message](it interface{ Next() (P, error) }, split func(P) (string, []T)) ([]scoped, error) {
	var out []scoped
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		key, items := split(pair)
		var sc Scope
		switch kind, name, _ := strings.Cut(key, "/"); kind {
		case "regions":
			sc = Scope{Region: name}
		case "zones":
			sc = Scope{Zone: name}
		default:
			continue // "global": listed on its own
		}
		for _, m := range items {
			out = append(out, scoped{sc, m})
		}
	}
}

// insert creates m (name and description set) in scope.
func (c *clients) insert(ctx context.Context, k Kind, scope Scope, m proto.Message) error {
	p, r := c.project, scope.Region
	g := r == ""
	switch v := m.(type) {
	case *computepb.Address:
		if g {
			return c.wait(ctx)(c.globalAddr.Insert(ctx, &computepb.InsertGlobalAddressRequest{Project: p, AddressResource: v}))
		}
		return c.wait(ctx)(c.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: p, Region: r, AddressResource: v}))
	case *computepb.Firewall:
		return c.wait(ctx)(c.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{Project: p, FirewallResource: v}))
	case *computepb.HealthCheck:
		if g {
			return c.wait(ctx)(c.healthChecks.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: p, HealthCheckResource: v}))
		}
		return c.wait(ctx)(c.regionHealthChecks.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{Project: p, Region: r, HealthCheckResource: v}))
	case *computepb.NetworkEndpointGroup:
		return c.wait(ctx)(c.negs.Insert(ctx, &computepb.InsertNetworkEndpointGroupRequest{Project: p, Zone: scope.Zone, NetworkEndpointGroupResource: v}))
	case *computepb.BackendService:
		if g {
			return c.wait(ctx)(c.backendServices.Insert(ctx, &computepb.InsertBackendServiceRequest{Project: p, BackendServiceResource: v}))
		}
		return c.wait(ctx)(c.regionBackendServices.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: p, Region: r, BackendServiceResource: v}))
	case *computepb.SslCertificate:
		if g {
			return c.wait(ctx)(c.sslCertificates.Insert(ctx, &computepb.InsertSslCertificateRequest{Project: p, SslCertificateResource: v}))
		}
		return c.wait(ctx)(c.regionSslCertificates.Insert(ctx, &computepb.InsertRegionSslCertificateRequest{Project: p, Region: r, SslCertificateResource: v}))
	case *computepb.UrlMap:
		if g {
			return c.wait(ctx)(c.urlMaps.Insert(ctx, &computepb.InsertUrlMapRequest{Project: p, UrlMapResource: v}))
		}
		return c.wait(ctx)(c.regionURLMaps.Insert(ctx, &computepb.InsertRegionUrlMapRequest{Project: p, Region: r, UrlMapResource: v}))
	case *computepb.TargetHttpProxy:
		if g {
			return c.wait(ctx)(c.targetHTTPProxies.Insert(ctx, &computepb.InsertTargetHttpProxyRequest{Project: p, TargetHttpProxyResource: v}))
		}
		return c.wait(ctx)(c.regionTargetHTTPProxies.Insert(ctx, &computepb.InsertRegionTargetHttpProxyRequest{Project: p, Region: r, TargetHttpProxyResource: v}))
	case *computepb.TargetHttpsProxy:
		if g {
			return c.wait(ctx)(c.targetHTTPSProxies.Insert(ctx, &computepb.InsertTargetHttpsProxyRequest{Project: p, TargetHttpsProxyResource: v}))
		}
		return c.wait(ctx)(c.regionTargetHTTPSProxies.Insert(ctx, &computepb.InsertRegionTargetHttpsProxyRequest{Project: p, Region: r, TargetHttpsProxyResource: v}))
	case *computepb.ForwardingRule:
		if g {
			return c.wait(ctx)(c.globalForwardingRules.Insert(ctx, &computepb.InsertGlobalForwardingRuleRequest{Project: p, ForwardingRuleResource: v}))
		}
		return c.wait(ctx)(c.forwardingRules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: p, Region: r, ForwardingRuleResource: v}))
	}
	return fmt.Errorf("inserting a %s: unknown kind", k)
}

// remove deletes the resource of kind k named name in scope.
func (c *clients) remove(ctx context.Context, k Kind, scope Scope, name string) error {
	p, r := c.project, scope.Region
	g := r == ""
	switch {
	case k == KindAddress && g:
		return c.wait(ctx)(c.globalAddr.Delete(ctx, &computepb.DeleteGlobalAddressRequest{Project: p, Address: name}))
	case k == KindAddress:
		return c.wait(ctx)(c.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: p, Region: r, Address: name}))
	case k == KindFirewall:
		return c.wait(ctx)(c.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{Project: p, Firewall: name}))
	case k == KindHealthCheck && g:
		return c.wait(ctx)(c.healthChecks.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: p, HealthCheck: name}))
	case k == KindHealthCheck:
		return c.wait(ctx)(c.regionHealthChecks.Delete(ctx, &computepb.DeleteRegionHealthCheckRequest{Project: p, Region: r, HealthCheck: name}))
	case k == KindNEG:
		return c.wait(ctx)(c.negs.Delete(ctx, &computepb.DeleteNetworkEndpointGroupRequest{Project: p, Zone: scope.Zone, NetworkEndpointGroup: name}))
	case k == KindBackendService && g:
		return c.wait(ctx)(c.backendServices.Delete(ctx, &computepb.DeleteBackendServiceRequest{Project: p, BackendService: name}))
	case k == KindBackendService:
		return c.wait(ctx)(c.regionBackendServices.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: p, Region: r, BackendService: name}))
	case k == KindSSLCertificate && g:
		return c.wait(ctx)(c.sslCertificates.Delete(ctx, &computepb.DeleteSslCertificateRequest{Project: p, SslCertificate: name}))
	case k == KindSSLCertificate:
		return c.wait(ctx)(c.regionSslCertificates.Delete(ctx, &computepb.DeleteRegionSslCertificateRequest{Project: p, Region: r, SslCertificate: name}))
	case k == KindURLMap && g:
		return c.wait(ctx)(c.urlMaps.Delete(ctx, &computepb.DeleteUrlMapRequest{Project: p, UrlMap: name}))
	case k == KindURLMap:
		return c.wait(ctx)(c.regionURLMaps.Delete(ctx, &computepb.DeleteRegionUrlMapRequest{Project: p, Region: r, UrlMap: name}))
	case k == KindTargetHTTPProxy && g:
		return c.wait(ctx)(c.targetHTTPProxies.Delete(ctx, &computepb.DeleteTargetHttpProxyRequest{Project: p, TargetHttpProxy: name}))
	case k == KindTargetHTTPProxy:
		return c.wait(ctx)(c.regionTargetHTTPProxies.Delete(ctx, &computepb.DeleteRegionTargetHttpProxyRequest{Project: p, Region: r, TargetHttpProxy: name}))
	case k == KindTargetHTTPSProxy && g:
		return c.wait(ctx)(c.targetHTTPSProxies.Delete(ctx, &computepb.DeleteTargetHttpsProxyRequest{Project: p, TargetHttpsProxy: name}))
	case k == KindTargetHTTPSProxy:
		return c.wait(ctx)(c.regionTargetHTTPSProxies.Delete(ctx, &computepb.DeleteRegionTargetHttpsProxyRequest{Project: p, Region: r, TargetHttpsProxy: name}))
	case k == KindForwardingRule && g:
		return c.wait(ctx)(c.globalForwardingRules.Delete(ctx, &computepb.DeleteGlobalForwardingRuleRequest{Project: p, ForwardingRule: name}))
	case k == KindForwardingRule:
		return c.wait(ctx)(c.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: p, Region: r, ForwardingRule: name}))
	}
	return fmt.Errorf("deleting a %s: unknown kind", k)
}

// put replaces a firewall rule, health check, backend service or URL map whole (Update, a PUT: a Patch would
// keep lists the desired resource empties). m carries the live fingerprint where the kind has one.
func (c *clients) put(ctx context.Context, scope Scope, name string, m proto.Message) error {
	p, r := c.project, scope.Region
	g := r == ""
	switch v := m.(type) {
	case *computepb.Firewall:
		return c.wait(ctx)(c.firewalls.Update(ctx, &computepb.UpdateFirewallRequest{Project: p, Firewall: name, FirewallResource: v}))
	case *computepb.HealthCheck:
		if g {
			return c.wait(ctx)(c.healthChecks.Update(ctx, &computepb.UpdateHealthCheckRequest{Project: p, HealthCheck: name, HealthCheckResource: v}))
		}
		return c.wait(ctx)(c.regionHealthChecks.Update(ctx, &computepb.UpdateRegionHealthCheckRequest{Project: p, Region: r, HealthCheck: name, HealthCheckResource: v}))
	case *computepb.BackendService:
		if g {
			return c.wait(ctx)(c.backendServices.Update(ctx, &computepb.UpdateBackendServiceRequest{Project: p, BackendService: name, BackendServiceResource: v}))
		}
		return c.wait(ctx)(c.regionBackendServices.Update(ctx, &computepb.UpdateRegionBackendServiceRequest{Project: p, Region: r, BackendService: name, BackendServiceResource: v}))
	case *computepb.UrlMap:
		if g {
			return c.wait(ctx)(c.urlMaps.Update(ctx, &computepb.UpdateUrlMapRequest{Project: p, UrlMap: name, UrlMapResource: v}))
		}
		return c.wait(ctx)(c.regionURLMaps.Update(ctx, &computepb.UpdateRegionUrlMapRequest{Project: p, Region: r, UrlMap: name, UrlMapResource: v}))
	}
	return fmt.Errorf("updating %s: not an updatable kind", name)
}

// setURLMap points a target HTTP(S) proxy at another URL map.
func (c *clients) setURLMap(ctx context.Context, k Kind, scope Scope, name, urlMap string) error {
	p, r, ref := c.project, scope.Region, &computepb.UrlMapReference{UrlMap: &urlMap}
	switch {
	case k == KindTargetHTTPProxy && r == "":
		return c.wait(ctx)(c.targetHTTPProxies.SetUrlMap(ctx, &computepb.SetUrlMapTargetHttpProxyRequest{Project: p, TargetHttpProxy: name, UrlMapReferenceResource: ref}))
	case k == KindTargetHTTPProxy:
		return c.wait(ctx)(c.regionTargetHTTPProxies.SetUrlMap(ctx, &computepb.SetUrlMapRegionTargetHttpProxyRequest{Project: p, Region: r, TargetHttpProxy: name, UrlMapReferenceResource: ref}))
	case r == "":
		return c.wait(ctx)(c.targetHTTPSProxies.SetUrlMap(ctx, &computepb.SetUrlMapTargetHttpsProxyRequest{Project: p, TargetHttpsProxy: name, UrlMapReferenceResource: ref}))
	}
	return c.wait(ctx)(c.regionTargetHTTPSProxies.SetUrlMap(ctx, &computepb.SetUrlMapRegionTargetHttpsProxyRequest{Project: p, Region: r, TargetHttpsProxy: name, UrlMapReferenceResource: ref}))
}

// setCertificates sets a target HTTPS proxy's certificates.
func (c *clients) setCertificates(ctx context.Context, scope Scope, name string, certs []string) error {
	if scope.Region == "" {
		return c.wait(ctx)(c.targetHTTPSProxies.SetSslCertificates(ctx, &computepb.SetSslCertificatesTargetHttpsProxyRequest{Project: c.project, TargetHttpsProxy: name,
			TargetHttpsProxiesSetSslCertificatesRequestResource: &computepb.TargetHttpsProxiesSetSslCertificatesRequest{SslCertificates: certs}}))
	}
	return c.wait(ctx)(c.regionTargetHTTPSProxies.SetSslCertificates(ctx, &computepb.SetSslCertificatesRegionTargetHttpsProxyRequest{Project: c.project, Region: scope.Region, TargetHttpsProxy: name,
		RegionTargetHttpsProxiesSetSslCertificatesRequestResource: &computepb.RegionTargetHttpsProxiesSetSslCertificatesRequest{SslCertificates: certs}}))
}

// setTarget points a forwarding rule at another target proxy.
func (c *clients) setTarget(ctx context.Context, scope Scope, name, target string) error {
	ref := &computepb.TargetReference{Target: &target}
	if scope.Region == "" {
		return c.wait(ctx)(c.globalForwardingRules.SetTarget(ctx, &computepb.SetTargetGlobalForwardingRuleRequest{Project: c.project, ForwardingRule: name, TargetReferenceResource: ref}))
	}
	return c.wait(ctx)(c.forwardingRules.SetTarget(ctx, &computepb.SetTargetForwardingRuleRequest{Project: c.project, Region: scope.Region, ForwardingRule: name, TargetReferenceResource: ref}))
}

// setLabels replaces the labels of an address or forwarding rule, with its label fingerprint.
func (c *clients) setLabels(ctx context.Context, k Kind, scope Scope, name string, labels map[string]string, fingerprint string) error {
	p, r := c.project, scope.Region
	switch {
	case k == KindAddress && r == "":
		return c.wait(ctx)(c.globalAddr.SetLabels(ctx, &computepb.SetLabelsGlobalAddressRequest{Project: p, Resource: name,
			GlobalSetLabelsRequestResource: &computepb.GlobalSetLabelsRequest{Labels: labels, LabelFingerprint: &fingerprint}}))
	case k == KindAddress:
		return c.wait(ctx)(c.addresses.SetLabels(ctx, &computepb.SetLabelsAddressRequest{Project: p, Region: r, Resource: name,
			RegionSetLabelsRequestResource: &computepb.RegionSetLabelsRequest{Labels: labels, LabelFingerprint: &fingerprint}}))
	case r == "":
		return c.wait(ctx)(c.globalForwardingRules.SetLabels(ctx, &computepb.SetLabelsGlobalForwardingRuleRequest{Project: p, Resource: name,
			GlobalSetLabelsRequestResource: &computepb.GlobalSetLabelsRequest{Labels: labels, LabelFingerprint: &fingerprint}}))
	}
	return c.wait(ctx)(c.forwardingRules.SetLabels(ctx, &computepb.SetLabelsForwardingRuleRequest{Project: p, Region: r, Resource: name,
		RegionSetLabelsRequestResource: &computepb.RegionSetLabelsRequest{Labels: labels, LabelFingerprint: &fingerprint}}))
}

// endpoints lists the network endpoints of a NEG.
func (c *clients) endpoints(ctx context.Context, zone, neg string) ([]*computepb.NetworkEndpoint, error) {
	it := c.negs.ListNetworkEndpoints(ctx, &computepb.ListNetworkEndpointsNetworkEndpointGroupsRequest{Project: c.project, Zone: zone, NetworkEndpointGroup: neg,
		NetworkEndpointGroupsListEndpointsRequestResource: &computepb.NetworkEndpointGroupsListEndpointsRequest{}}, c.co...)
	var out []*computepb.NetworkEndpoint
	for {
		e, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e.GetNetworkEndpoint())
	}
}

// attach and detach change a NEG's endpoints.
func (c *clients) attach(ctx context.Context, zone, neg string, eps []*computepb.NetworkEndpoint) error {
	return c.wait(ctx)(c.negs.AttachNetworkEndpoints(ctx, &computepb.AttachNetworkEndpointsNetworkEndpointGroupRequest{Project: c.project, Zone: zone, NetworkEndpointGroup: neg,
		NetworkEndpointGroupsAttachEndpointsRequestResource: &computepb.NetworkEndpointGroupsAttachEndpointsRequest{NetworkEndpoints: eps}}))
}

func (c *clients) detach(ctx context.Context, zone, neg string, eps []*computepb.NetworkEndpoint) error {
	return c.wait(ctx)(c.negs.DetachNetworkEndpoints(ctx, &computepb.DetachNetworkEndpointsNetworkEndpointGroupRequest{Project: c.project, Zone: zone, NetworkEndpointGroup: neg,
		NetworkEndpointGroupsDetachEndpointsRequestResource: &computepb.NetworkEndpointGroupsDetachEndpointsRequest{NetworkEndpoints: eps}}))
}

// addressIP reads the IP of the address named name in scope.
func (c *clients) addressIP(ctx context.Context, scope Scope, name string) (string, error) {
	var a *computepb.Address
	var err error
	if scope.Region == "" {
		a, err = c.globalAddr.Get(ctx, &computepb.GetGlobalAddressRequest{Project: c.project, Address: name})
	} else {
		a, err = c.addresses.Get(ctx, &computepb.GetAddressRequest{Project: c.project, Region: scope.Region, Address: name})
	}
	if err != nil {
		return "", err
	}
	return a.GetAddress(), nil
}
