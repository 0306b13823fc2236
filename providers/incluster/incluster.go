// Package incluster is the provider that runs fleetgate's own proxy next to each Gateway: a
// Deployment, a Service exposing it and a ServiceAccount, in the Gateway's namespace and member
// cluster, owned by the Gateway.
package incluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Name is the provider name in GatewayClassConfig.spec.provider.
const Name = string(v1alpha1.ProviderInCluster)

// DefaultFieldOwner is the server-side apply field manager.
const DefaultFieldOwner = "fleetgate-incluster"

// Options configure a Provider.
type Options struct {
	// Client returns the client of a member cluster. It must be able to read and write
	// Deployments, Services and ServiceAccounts, and should read from the API server or a
	// cache that keeps managedFields (without them every Ensure re-applies, harmlessly).
	Client func(cluster string) (client.Client, error)
	// Image is the proxy image.
	Image string
	// XDSAddress is where proxies reach the operator's config server; used by the default Args.
	XDSAddress string
	// Args returns the proxy's arguments for lb; nil means DefaultArgs.
	Args func(lb *providers.LoadBalancer, xdsAddress string) []string
	// Customize, if set, edits the proxy pod spec of lb in cluster before it is applied (e.g.
	// to mount the xDS client certificate). It must be deterministic.
	Customize func(lb *providers.LoadBalancer, cluster string, pod *corev1ac.PodSpecApplyConfiguration)
	// FieldOwner is the server-side apply field manager; empty means DefaultFieldOwner.
	FieldOwner string
	// Credentials, when set, issues the client certificate a gateway's proxies present to the
	// config server; the provider keeps it in a Secret mounted into the proxy pods. CA returns
	// the PEM of the CA it is issued by, to tell when a certificate must be reissued.
	Credentials func(gateway string) (Credentials, error)
	CA          func() []byte
	// Clusters returns the member clusters List looks in; List fails without it.
	Clusters func() []string
}

// DefaultArgs are `dataplane --gateway <key> --xds-address <addr>`.
func DefaultArgs(lb *providers.LoadBalancer, xdsAddress string) []string {
	return []string{"dataplane", "--gateway", lb.Gateway, "--xds-address", xdsAddress}
}

// Provider is the in-cluster provider. It keeps no state: everything is read back from the
// clusters on every call.
type Provider struct {
	opts Options
}

var _ providers.Provider = (*Provider)(nil)

// New returns a Provider.
func New(opts Options) (*Provider, error) {
	if opts.Client == nil {
		return nil, errors.New("incluster: Options.Client is required")
	}
	if opts.Image == "" {
		return nil, errors.New("incluster: Options.Image is required")
	}
	if opts.Args == nil {
		opts.Args = DefaultArgs
	}
	if (opts.Credentials == nil) != (opts.CA == nil) {
		return nil, errors.New("incluster: Options.Credentials and Options.CA go together")
	}
	if opts.FieldOwner == "" {
		opts.FieldOwner = DefaultFieldOwner
	}
	return &Provider{opts: opts}, nil
}

func (p *Provider) args(lb *providers.LoadBalancer) []string {
	return p.opts.Args(lb, p.opts.XDSAddress)
}

// Ensure applies the proxy of lb in every cluster of lb.Clusters. The result is ready when it
// is ready in all of them; its addresses are those of every cluster.
func (p *Provider) Ensure(ctx context.Context, lb *providers.LoadBalancer) (providers.Status, error) {
	if len(lb.Clusters) == 0 {
		return providers.Status{Reason: providers.ReasonNoResources, Message: "the gateway is in no member cluster"}, nil
	}
	total := providers.Status{Ready: true, Reason: providers.ReasonProgrammed}
	for _, cluster := range lb.Clusters {
		st, err := p.ensureIn(ctx, lb, cluster)
		if err != nil {
			return providers.Status{}, fmt.Errorf("incluster: gateway %s in cluster %s: %w", lb.Gateway, cluster, err)
		}
		total.Addresses = append(total.Addresses, st.Addresses...)
		if !st.Ready && total.Ready {
			total.Ready, total.Reason, total.Message = false, st.Reason, st.Message
			if len(lb.Clusters) > 1 {
				total.Message = fmt.Sprintf("cluster %s: %s", cluster, st.Message)
			}
		}
	}
	total.Addresses = providers.SortAddresses(total.Addresses)
	return total, nil
}

func (p *Provider) ensureIn(ctx context.Context, lb *providers.LoadBalancer, cluster string) (providers.Status, error) {
	c, err := p.opts.Client(cluster)
	if err != nil {
		return providers.Status{}, err
	}
	if len(lb.Ports) == 0 {
		// A Service needs ports; with no valid listener there is nothing to serve.
		if err := deleteOwned(ctx, c, lb); err != nil {
			return providers.Status{}, err
		}
		return providers.Status{Reason: providers.ReasonNoResources, Message: "the gateway has no valid listener"}, nil
	}
	_, svcType := params(lb)
	plan := planAddresses(lb, svcType)

	if p.opts.Credentials != nil {
		if err := p.ensureCredentials(ctx, c, lb, cluster); err != nil {
			return providers.Status{}, err
		}
	}
	sa := &corev1.ServiceAccount{}
	if err := apply(ctx, c, p.opts.FieldOwner, sa, buildServiceAccount(lb, cluster), corev1ac.ExtractServiceAccount); err != nil {
		return providers.Status{}, err
	}
	dep := &appsv1.Deployment{}
	if err := apply(ctx, c, p.opts.FieldOwner, dep, p.buildDeployment(lb, cluster), appsv1ac.ExtractDeployment); err != nil {
		return providers.Status{}, err
	}
	svc := &corev1.Service{}
	if err := apply(ctx, c, p.opts.FieldOwner, svc, buildService(lb, cluster, plan), corev1ac.ExtractService); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			if plan.loadBalancerIP != "" || len(plan.externalIPs) > 0 {
				// Most likely the requested address (externalIPs are often denied by admission).
				return providers.Status{Reason: providers.ReasonAddressNotUsable, Message: err.Error()}, nil
			}
		}
		return providers.Status{}, err
	}
	return status(lb, dep, svc, plan), nil
}

// namedApply is an apply configuration whose name and namespace are known.
type namedApply interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetNamespace() *string
}

// apply reads the object, and server-side applies desired only if the fields this field owner
// manages differ from it, so that an unchanged model makes no write at all. obj is left holding
// the live object.
func apply[O client.Object, A namedApply](ctx context.Context, c client.Client, owner string, obj O, desired A, extract func(O, string) (A, error)) error {
	key := client.ObjectKey{Namespace: *desired.GetNamespace(), Name: *desired.GetName()}
	err := c.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading %T %s: %w", obj, key, err)
	default:
		if cur, err := extract(obj, owner); err == nil && equality.Semantic.DeepEqual(cur, desired) {
			return nil
		}
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(owner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %T %s: %w", obj, key, err)
	}
	if err := c.Get(ctx, key, obj); err != nil {
		return fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return nil
}

// status reads readiness and addresses off the live Deployment and Service.
func status(lb *providers.LoadBalancer, dep *appsv1.Deployment, svc *corev1.Service, plan addressPlan) providers.Status {
	var addrs []providers.Address
	ip := func(v string) {
		addrs = append(addrs, providers.Address{Type: providers.AddressTypeIPAddress, Value: v})
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer:
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ip(in.IP)
			}
			if in.Hostname != "" {
				addrs = append(addrs, providers.Address{Type: providers.AddressTypeHostname, Value: in.Hostname})
			}
		}
	case corev1.ServiceTypeClusterIP:
		for _, v := range svc.Spec.ClusterIPs {
			if v != "" && v != corev1.ClusterIPNone {
				ip(v)
			}
		}
	}
	// Requested external IPs are served by kube-proxy on every node; for a NodePort Service they
	// are the only addresses we can name, since reading nodes is not this provider's business.
	for _, v := range svc.Spec.ExternalIPs {
		ip(v)
	}
	st := providers.Status{Addresses: providers.SortAddresses(addrs)}

	want, _ := params(lb)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	available := dep.Status.ObservedGeneration >= dep.Generation &&
		dep.Status.UpdatedReplicas >= want && dep.Status.AvailableReplicas >= want
	switch {
	case plan.reason != "":
		st.Reason, st.Message = plan.reason, plan.message
	case plan.loadBalancerIP != "" && len(addrs) > 0 && !slices.ContainsFunc(addrs, func(a providers.Address) bool { return a.Value == plan.loadBalancerIP }):
		st.Reason = providers.ReasonAddressNotUsable
		st.Message = fmt.Sprintf("requested address %s was not assigned to Service %s/%s", plan.loadBalancerIP, svc.Namespace, svc.Name)
	case len(addrs) == 0:
		st.Reason = providers.ReasonAddressNotAssigned
		st.Message = fmt.Sprintf("Service %s/%s of type %s has no address yet", svc.Namespace, svc.Name, svc.Spec.Type)
		if svc.Spec.Type == corev1.ServiceTypeNodePort {
			st.Message = fmt.Sprintf("Service %s/%s is a NodePort; node addresses are not reported, request an IPAddress to use external IPs", svc.Namespace, svc.Name)
		}
	case !available:
		st.Reason = providers.ReasonPending
		st.Message = fmt.Sprintf("Deployment %s/%s has %d of %d replicas available", dep.Namespace, dep.Name, dep.Status.AvailableReplicas, want)
	default:
		st.Ready, st.Reason = true, providers.ReasonProgrammed
	}
	return st
}

// Delete removes the proxy of lb from every cluster of lb.Clusters.
func (p *Provider) Delete(ctx context.Context, lb *providers.LoadBalancer) error {
	var errs []error
	for _, cluster := range lb.Clusters {
		c, err := p.opts.Client(cluster)
		if err == nil {
			err = deleteOwned(ctx, c, lb)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("incluster: deleting gateway %s in cluster %s: %w", lb.Gateway, cluster, err))
		}
	}
	return errors.Join(errs...)
}

// deleteOwned deletes every object carrying lb's ownership labels in its namespace, found by
// label rather than by name so that nothing an earlier naming scheme made is leaked.
func deleteOwned(ctx context.Context, c client.Client, lb *providers.LoadBalancer) error {
	sel := client.MatchingLabels(providers.OwnerSelector(lb.Gateway))
	for _, kind := range ownedKinds() {
		objs, err := listMeta(ctx, c, kind, client.InNamespace(lb.Namespace), sel)
		if err != nil {
			return err
		}
		for _, o := range objs {
			// Preconditions make sure we delete the object we listed, not a namesake made since.
			err := c.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground),
				client.Preconditions{UID: ptr.To(o.GetUID())})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting %s %s/%s: %w", kind.Kind, o.GetNamespace(), o.GetName(), err)
			}
		}
	}
	return nil
}

// Capabilities validates spec.inCluster; the fleetgate proxy expresses everything.
func (p *Provider) Capabilities(params json.RawMessage) (providers.Capabilities, error) {
	if _, err := decodeParams(params); err != nil {
		return providers.Capabilities{}, err
	}
	return providers.FullCapabilities(), nil
}
