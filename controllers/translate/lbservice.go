package translate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// Services of type LoadBalancer whose spec.loadBalancerClass is one of ours each get their own
// gateway, keyed "<cluster>/service:<namespace>/<name>": one TCP or UDP listener per Service port
// forwarding to the Service's own ready endpoints. Services of any other class, or none, are
// never read further, never written to.
//
// - loadBalancerSourceRanges (or, when empty, the legacy
//   service.beta.kubernetes.io/load-balancer-source-ranges annotation) become every listener's
//   ir.Listener.SourceRanges; the proxy drops other clients. A range that does not parse leaves
//   the Service unserved (fail closed) and is reported.
// - externalTrafficPolicy: the proxy dials endpoints directly, with no node hop, so Cluster and
//   Local behave the same; the client address is what source ranges are checked against.
// - sessionAffinity ClientIP: the in-cluster proxy keeps each client IP on one endpoint
//   (ir.L4Route.ClientIPAffinity, rendezvous hashing: a client moves only when its endpoint goes
//   away; timeoutSeconds is not applied). The cloud providers do not set stickiness on their
//   target groups yet, which is reported as a Normal notice.
// - SCTP ports are not served and are reported.
// - endpoints come from the EndpointSlice controller's slices only, minus the default denied
//   networks (loopback, link-local, metadata); what is left out is reported.
// - status.loadBalancer.ingress gets the provider's addresses with the ports, ipMode Proxy for the
//   in-cluster proxy (it terminates connections), once the proxies ACKed.

// annotationSourceRanges is the pre-field way of restricting LoadBalancer clients.
const annotationSourceRanges = "service.beta.kubernetes.io/load-balancer-source-ranges"

// Service annotations a provider reads from the model's Annotations, as it reads a Gateway's
// spec.infrastructure.annotations: the user tags of the aws provider (its AnnotationTags, and the
// AWS Load Balancer Controller's AnnotationLBCTags, so that Services move over unchanged). Only
// these are carried, so that an unrelated annotation (kubectl's last-applied configuration) does
// not change the model.
const (
	annotationAWSTags = "fleetgate.dev/aws-tags"
	annotationLBCTags = "service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags"
)

// awsNLBParameters and gcpNetworkParameters make the AWS and GCP providers build a network load
// balancer for a Service; the rest of their options come from the operator's defaults.
const (
	awsNLBParameters     = `{"loadBalancerType":"network"}`
	gcpNetworkParameters = `{"loadBalancerType":"network"}`
)

// lbClassProvider maps our Service load-balancer classes to providers and the parameters they stand for.
func lbClassProvider(class string) (v1alpha1.Provider, json.RawMessage, bool) {
	switch class {
	case v1alpha1.LoadBalancerClassInCluster:
		return v1alpha1.ProviderInCluster, nil, true
	case v1alpha1.LoadBalancerClassAWSNLB:
		return v1alpha1.ProviderAWS, json.RawMessage(awsNLBParameters), true
	case v1alpha1.LoadBalancerClassGCP:
		return v1alpha1.ProviderGCP, json.RawMessage(gcpNetworkParameters), true
	}
	return "", nil, false
}

// LoadBalancerClassOfOurs tells whether a Service's spec.loadBalancerClass is one fleetgate serves.
func LoadBalancerClassOfOurs(class string) bool {
	_, _, ok := lbClassProvider(class)
	return ok
}

// translateLBServices adds the config, model and status of every LoadBalancer Service of ours.
func (t *translator) translateLBServices() {
	pol := defaultProxyPolicy() // these Services have no class of ours to configure it
	for _, o := range t.snap.Services {
		svc := o.Obj
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Spec.LoadBalancerClass == nil {
			continue
		}
		provider, params, ok := lbClassProvider(*svc.Spec.LoadBalancerClass)
		if !ok {
			continue
		}
		ref := ObjectRef{Cluster: o.Cluster, Kind: kindService, Namespace: svc.Namespace, Name: svc.Name}
		caps, err := t.capabilities(string(provider), params)
		if err != nil {
			t.notice(ref, corev1.EventTypeWarning, "InvalidParameters", "the Service is not exposed: %v", err)
			continue
		}
		ranges, err := sourceRanges(svc)
		if err != nil {
			t.notice(ref, corev1.EventTypeWarning, "InvalidSourceRanges", "the Service is not exposed: %v", err)
			continue
		}
		affinity := svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP
		if affinity && provider != v1alpha1.ProviderInCluster {
			t.notice(ref, corev1.EventTypeNormal, "SessionAffinityIgnored",
				"sessionAffinity ClientIP is not honoured by the %s load balancer; connections are spread over the endpoints", provider)
		}
		key := o.Cluster + "/service:" + svc.Namespace + "/" + svc.Name
		cfg := ir.Config{Gateway: key}
		lb := providers.LoadBalancer{
			Gateway: key, Namespace: svc.Namespace, Name: svc.Name, Class: *svc.Spec.LoadBalancerClass,
			Provider: string(provider), Scope: string(v1alpha1.ScopeCluster), Clusters: []string{o.Cluster},
			Parameters: params,
		}
		for _, a := range []string{annotationAWSTags, annotationLBCTags} {
			if v, ok := svc.Annotations[a]; ok && provider == v1alpha1.ProviderAWS {
				if lb.Annotations == nil {
					lb.Annotations = map[string]string{}
				}
				lb.Annotations[a] = v
			}
		}
		st := ServiceStatus{Ref: ref, Gateway: key}
		if provider == v1alpha1.ProviderInCluster {
			st.IPMode = new(corev1.LoadBalancerIPModeProxy)
		}
		for _, sp := range svc.Spec.Ports {
			proto := cmp.Or(sp.Protocol, corev1.ProtocolTCP)
			irp := ir.ProtocolTCP
			switch proto {
			case corev1.ProtocolTCP:
			case corev1.ProtocolUDP:
				irp = ir.ProtocolUDP
			default:
				t.notice(ref, corev1.EventTypeWarning, "UnsupportedProtocol", "port %d: protocol %s is not supported; the port is not exposed", sp.Port, proto)
				continue
			}
			if !caps.Protocol(string(irp)) {
				t.notice(ref, corev1.EventTypeWarning, "UnsupportedProtocol", "port %d: %s; the port is not exposed",
					sp.Port, unsupported("protocol", string(proto), string(provider)))
				continue
			}
			port := strconv.Itoa(int(sp.Port))
			eps, notes := t.endpoints(pol, o.Cluster, svc.Namespace, svc.Name, sp.Name, proto)
			for _, n := range notes.notes(fmt.Sprintf("port %d", sp.Port)) {
				t.notice(ref, corev1.EventTypeWarning, n.reason, "%s", n.msg)
			}
			cfg.Listeners = append(cfg.Listeners, ir.Listener{
				Name: lowerProto(proto) + "-" + port, Port: uint32(sp.Port), Protocol: irp, SourceRanges: ranges,
				L4: &ir.L4Route{Name: kindService + "/" + svc.Namespace + "/" + svc.Name + ":" + port, Backends: []ir.Backend{{
					Name: o.Cluster + "/" + svc.Namespace + "/" + svc.Name + ":" + port, Weight: 1,
					Endpoints: eps,
				}}, ClientIPAffinity: affinity},
			})
			st.Ports = append(st.Ports, corev1.PortStatus{Port: sp.Port, Protocol: proto})
		}
		slices.SortStableFunc(cfg.Listeners, func(a, b ir.Listener) int {
			return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
		})
		for _, l := range cfg.Listeners {
			tr := providers.TransportTCP
			if l.Protocol == ir.ProtocolUDP {
				tr = providers.TransportUDP
			}
			lb.Ports = append(lb.Ports, providers.Port{Port: int32(l.Port), Transport: tr, Protocol: string(l.Protocol)})
		}
		t.res.Configs = append(t.res.Configs, cfg)
		t.res.LoadBalancers = append(t.res.LoadBalancers, lb)
		t.res.Services = append(t.res.Services, st)
	}
}

// sourceRanges returns the Service's allowed client networks, masked, sorted and deduplicated.
func sourceRanges(svc *corev1.Service) ([]string, error) {
	in := svc.Spec.LoadBalancerSourceRanges
	if len(in) == 0 {
		if v := strings.TrimSpace(svc.Annotations[annotationSourceRanges]); v != "" {
			in = strings.Split(v, ",")
		}
	}
	var out []string
	for _, r := range in {
		p, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil {
			return nil, fmt.Errorf("loadBalancerSourceRanges: %w", err)
		}
		out = append(out, p.Masked().String())
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
