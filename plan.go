package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers"
	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// planMain is `fleetgate plan`: it prints the calls the AWS and GCP providers would make to bring
// the live accounts and projects to each load balancer the hub asks for, and makes no mutating call. It exits 1 when a
// plan could not be made.
func planMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fleetgate plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fleetgate plan [--gateway namespace/name] [flags]\n\n"+
			"Reads the hub cluster once, translates it, and prints for each load balancer of provider aws\n"+
			"or gcp the cloud calls the operator would make; makes none that mutates.\n\nflags:")
		fs.PrintDefaults()
	}
	var o options
	addAWSFlags(fs, &o)
	addGCPFlags(fs, &o)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the hub (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
	gateway := fs.String("gateway", "", "plan only this Gateway (namespace/name)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := planConfig(*kubeconfig)
	if err == nil {
		err = runPlan(ctx, cfg, o, *gateway, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "fleetgate plan:", err)
		return 1
	}
	return 0
}

func planConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// runPlan translates the hub once, as the operator's next pass would, and writes one block per load
// balancer of provider aws or gcp (only gateway's, when set).
func runPlan(ctx context.Context, cfg *rest.Config, o options, gateway string, w io.Writer) error {
	scheme, err := controllers.NewScheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating the hub's client: %w", err)
	}
	// Health checks follow readiness probes as in the operator; plan reads the hub's pods only.
	probes := controllers.NewPodProbes(memberClients(c, &controllers.MemberClients{}))
	p, err := newAWS(ctx, o, c, nil, planProxies{hub: c}, probes, prometheus.NewRegistry(), logr.Discard())
	if err != nil {
		return err
	}
	g, err := newGCP(ctx, o, c, probes, prometheus.NewRegistry(), logr.Discard())
	if err != nil {
		return err
	}
	defer g.Close()
	// Translation consults the providers' capabilities, as in the operator: a rule a load
	// balancer cannot express is left out of the model here too.
	catalog := providers.NewRegistry()
	catalog.Register(string(v1alpha1.ProviderAWS), p)
	catalog.Register(string(v1alpha1.ProviderGCP), g)
	res, err := controllers.TranslateOnce(ctx, c, translate.WithCatalog(catalog))
	if err != nil {
		return err
	}
	var errs []error
	found := false
	for i := range res.LoadBalancers {
		lb := &res.LoadBalancers[i]
		if gateway != "" && lb.Namespace+"/"+lb.Name != gateway {
			continue
		}
		switch lb.Provider {
		case string(v1alpha1.ProviderAWS):
			calls, err := p.Plan(ctx, lb)
			writePlan(w, lb, calls, err)
			errs = append(errs, err)
		case string(v1alpha1.ProviderGCP):
			calls, err := g.Plan(ctx, lb)
			writePlan(w, lb, calls, err)
			errs = append(errs, err)
		default:
			continue
		}
		found = true
	}
	if !found && gateway != "" {
		return fmt.Errorf("no load balancer of provider aws or gcp for Gateway %s (is its class accepted and of a cloud provider?)", gateway)
	}
	if !found {
		_, err := fmt.Fprintln(w, "no load balancer of provider aws or gcp in the hub")
		return err
	}
	return errors.Join(errs...)
}

// writePlan writes one load balancer's block: its calls in order, "in sync", or why no plan.
func writePlan[C fmt.Stringer](w io.Writer, lb *providers.LoadBalancer, calls []C, err error) {
	head := fmt.Sprintf("%s (class %s)", lb.Gateway, lb.Class)
	switch {
	case err != nil:
		fmt.Fprintf(w, "%s: no plan: %v\n", head, err)
	case len(calls) == 0:
		fmt.Fprintf(w, "%s: in sync\n", head)
	default:
		fmt.Fprintf(w, "%s: %d calls would be made\n", head, len(calls))
		for i, c := range calls {
			fmt.Fprintf(w, "  %3d. %s\n", i+1, c)
		}
	}
}

// planProxies show a plan where the proxies behind a network load balancer are, from the hub
// alone: the ready addresses of the proxy Service's EndpointSlices, as the operator finds them in
// a cluster. A plan never runs nor removes proxies (the provider's Plan asks only Endpoints).
type planProxies struct{ hub client.Client }

func (planProxies) Ensure(context.Context, *providers.LoadBalancer) (providers.Status, error) {
	return providers.Status{}, errPlanMutates
}

func (planProxies) Delete(context.Context, *providers.LoadBalancer) error { return errPlanMutates }

// Endpoints refuses a gateway whose proxies run as processes of a local-mode operator: their
// loopback addresses are the operator's alone and have no EndpointSlices, so a plan without them
// would show targets the operator never registers.
func (p planProxies) Endpoints(ctx context.Context, lb *providers.LoadBalancer) ([]ir.Endpoint, error) {
	var svc corev1.Service
	err := p.hub.Get(ctx, client.ObjectKey{Namespace: lb.Namespace, Name: providers.ResourceName(lb)}, &svc)
	switch {
	case apierrors.IsNotFound(err):
		// The proxies do not run yet: the operator's next pass starts them and registers no
		// target before their pods are ready.
	case err != nil:
		return nil, fmt.Errorf("reading the proxies' Service %s/%s: %w", lb.Namespace, providers.ResourceName(lb), err)
	case ptr.Deref(svc.Spec.LoadBalancerClass, "") == v1alpha1.LoadBalancerClassLocal:
		return nil, errLocalProxies
	}
	return proxyPods(func(cluster string) (client.Client, error) {
		if cluster != v1alpha1.HubCluster {
			return nil, fmt.Errorf("the proxies in member cluster %s: plan reads the hub alone", cluster)
		}
		return p.hub, nil
	})(ctx, lb)
}

var (
	errPlanMutates  = errors.New("fleetgate plan never runs nor removes proxies")
	errLocalProxies = errors.New("the proxies behind this network load balancer are processes of an operator in local mode: their addresses cannot be known outside the operator")
)
