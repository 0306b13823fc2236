package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
	"github.com/fleetgate/fleetgate/providers/aws"
)

// addAWSFlags defines the flags of the AWS provider, which the operator and `fleetgate plan` share.
func addAWSFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.fleetID, "fleet-id", "", "tags every cloud resource, so that fleets sharing an account never touch each other's (default: the UID of the hub's kube-system namespace)")
	fs.StringVar(&o.awsRegion, "aws-region", os.Getenv("AWS_REGION"), "AWS region of classes that name none, and of LoadBalancer Services of class "+v1alpha1.LoadBalancerClassAWSNLB)
	fs.StringVar(&o.awsEndpoint, "aws-endpoint", "", "AWS API endpoint of classes that name none (a VPC endpoint; default AWS's)")
	fs.Float64Var(&o.awsQPS, "aws-qps", 10, "AWS API calls per second per account and region, shared by every gateway")
	fs.IntVar(&o.awsBurst, "aws-burst", 20, "AWS API call burst per account and region")
}

// newAWS builds the provider of aws classes. Its static keys come from Secrets read directly (the
// manager caches no Secrets of other namespaces), its accounts from the GatewayClassConfigs.
// proxies serve the HTTP and HTTPS listeners of network load balancers; nil refuses them. probes
// find backends' readiness probes for the health checks.
func newAWS(ctx context.Context, o options, direct client.Client, records aws.MemberRecords, proxies aws.Proxies, probes providers.ReadinessProbes, reg prometheus.Registerer, logger logr.Logger) (*aws.Provider, error) {
	fleet, err := fleetID(ctx, o, direct)
	if err != nil {
		return nil, err
	}
	return aws.New(aws.Options{
		Fleet:    fleet,
		Defaults: v1alpha1.AWSOptions{Region: o.awsRegion, Endpoint: o.awsEndpoint},
		Secrets:  secretData(direct),
		Classes: func(ctx context.Context) ([]v1alpha1.AWSOptions, error) {
			var list v1alpha1.GatewayClassConfigList
			if err := direct.List(ctx, &list); err != nil {
				return nil, err
			}
			var out []v1alpha1.AWSOptions
			for _, c := range list.Items {
				if c.Spec.Provider == v1alpha1.ProviderAWS && c.Spec.AWS != nil {
					out = append(out, *c.Spec.AWS)
				}
			}
			return out, nil
		},
		Members:    memberSpecs(direct),
		Records:    records,
		Namespace:  o.namespace,
		Proxies:    proxies,
		Probes:     probes,
		QPS:        o.awsQPS,
		Burst:      o.awsBurst,
		Registerer: reg,
		Log:        logger.WithName("aws"),
	})
}

// fleetID is --fleet-id, or the UID of the hub's kube-system namespace, which lives as long as
// the hub: a stable, unique fleet ID for the tags and names of every cloud resource.
func fleetID(ctx context.Context, o options, direct client.Reader) (string, error) {
	if o.fleetID != "" {
		return o.fleetID, nil
	}
	var ns corev1.Namespace
	if err := direct.Get(ctx, client.ObjectKey{Name: "kube-system"}, &ns); err != nil {
		return "", fmt.Errorf("deriving the fleet ID from the kube-system namespace (or set --fleet-id): %w", err)
	}
	return string(ns.UID), nil
}

// secretData reads a Secret's data directly (the manager caches no Secrets of other namespaces).
func secretData(direct client.Reader) func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return func(ctx context.Context, namespace, name string) (map[string][]byte, error) {
		var s corev1.Secret
		if err := direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
			return nil, err
		}
		return s.Data, nil
	}
}

// memberSpecs reads the spec of every MemberCluster by name, the name endpoints carry as their
// cluster: the provider opens the security groups of members that name some to the load
// balancers. Members being deleted are left out: their rules go (SweepMembers revokes them in the
// accounts their records name, then releases their finalizer).
func memberSpecs(c client.Reader) func(context.Context) (map[string]v1alpha1.MemberClusterSpec, error) {
	return func(ctx context.Context) (map[string]v1alpha1.MemberClusterSpec, error) {
		var list v1alpha1.MemberClusterList
		if err := c.List(ctx, &list); err != nil {
			return nil, err
		}
		out := make(map[string]v1alpha1.MemberClusterSpec, len(list.Items))
		for _, m := range list.Items {
			if m.DeletionTimestamp.IsZero() {
				out[m.Name] = m.Spec
			}
		}
		return out, nil
	}
}

// nlbProxies runs the proxies behind network load balancers with the provider of incluster classes
// and finds their pods through the endpoints of the Service it makes for them.
type nlbProxies struct {
	providers.Provider
	endpoints func(ctx context.Context, lb *providers.LoadBalancer) ([]ir.Endpoint, error)

	mu sync.Mutex
	// gateways maps the proxy Service of each gateway it runs proxies for to the gateway's key.
	gateways map[types.NamespacedName]string
}

func newNLBProxies(p providers.Provider, endpoints func(context.Context, *providers.LoadBalancer) ([]ir.Endpoint, error)) *nlbProxies {
	return &nlbProxies{Provider: p, endpoints: endpoints, gateways: map[types.NamespacedName]string{}}
}

func (n *nlbProxies) Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	n.mu.Lock()
	n.gateways[types.NamespacedName{Namespace: lb.Namespace, Name: providers.ResourceName(lb)}] = lb.Gateway
	n.mu.Unlock()
	return n.Provider.Ensure(ctx, lb)
}

func (n *nlbProxies) Delete(ctx context.Context, lb *providers.LoadBalancer) error {
	if err := n.Provider.Delete(ctx, lb); err != nil {
		return err
	}
	n.mu.Lock()
	delete(n.gateways, types.NamespacedName{Namespace: lb.Namespace, Name: providers.ResourceName(lb)})
	n.mu.Unlock()
	return nil
}

func (n *nlbProxies) Endpoints(ctx context.Context, lb *providers.LoadBalancer) ([]ir.Endpoint, error) {
	return n.endpoints(ctx, lb)
}

// eventSource is the part of an informer watchPods uses.
type eventSource interface {
	AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error)
}

// watchPods has recheck(gateway) called when the EndpointSlices of the gateway's proxies change in
// informer's cluster: the NLB's targets are those pods, which the gateway's model does not hold,
// so no translation would have the AWS provider look again before its resync.
func (n *nlbProxies) watchPods(informer eventSource, recheck func(gateway string)) error {
	changed := func(obj any) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		n.mu.Lock()
		gw, ok := n.gateways[types.NamespacedName{Namespace: s.Namespace, Name: s.Labels[discoveryv1.LabelServiceName]}]
		n.mu.Unlock()
		if ok {
			recheck(gw)
		}
	}
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: changed,
	})
	if err != nil {
		return fmt.Errorf("watching the EndpointSlices of the proxies behind network load balancers: %w", err)
	}
	return nil
}

// proxyPods lists the ready pod addresses of lb's proxy Service in each of its clusters. Only the
// EndpointSlice controller's slices count (the proxy Service has a selector): anyone allowed to
// write an EndpointSlice in the Gateway's namespace could otherwise have the load balancer send
// the gateway's traffic to any address.
func proxyPods(clients func(cluster string) (client.Client, error)) func(context.Context, *providers.LoadBalancer) ([]ir.Endpoint, error) {
	return func(ctx context.Context, lb *providers.LoadBalancer) ([]ir.Endpoint, error) {
		var out []ir.Endpoint
		for _, cluster := range lb.Clusters {
			c, err := clients(cluster)
			if err != nil {
				return nil, err
			}
			var list discoveryv1.EndpointSliceList
			if err := c.List(ctx, &list, client.InNamespace(lb.Namespace),
				client.MatchingLabels{discoveryv1.LabelServiceName: providers.ResourceName(lb)}); err != nil {
				return nil, fmt.Errorf("listing the proxies' endpoints in cluster %s: %w", cluster, err)
			}
			for _, s := range list.Items {
				if s.Labels[discoveryv1.LabelManagedBy] != endpointSliceController || s.AddressType == discoveryv1.AddressTypeFQDN {
					continue
				}
				for _, ep := range s.Endpoints {
					if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
						continue
					}
					for _, a := range ep.Addresses {
						out = append(out, ir.Endpoint{Address: a, Cluster: cluster})
					}
				}
			}
		}
		return out, nil
	}
}

// endpointSliceController is the managed-by value of Kubernetes' EndpointSlice controller.
const endpointSliceController = "endpointslice-controller.k8s.io"

// localProxyAddresses are the loopback addresses of local proxies, which their provider reports
// as the gateway's addresses (Ensure of a running proxy changes nothing).
func localProxyAddresses(p providers.Provider) func(context.Context, *providers.LoadBalancer) ([]ir.Endpoint, error) {
	return func(ctx context.Context, lb *providers.LoadBalancer) ([]ir.Endpoint, error) {
		st, err := p.Ensure(ctx, lb)
		if err != nil {
			return nil, err
		}
		var out []ir.Endpoint
		for _, a := range st.Addresses {
			if a.Type == providers.AddressTypeIPAddress {
				out = append(out, ir.Endpoint{Address: a.Value, Cluster: lb.Clusters[0]})
			}
		}
		return out, nil
	}
}
