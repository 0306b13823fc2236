package incluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/providers"
)

// Defaults for a model without InCluster parameters, as in GatewayClassConfig's CRD defaults.
const (
	DefaultReplicas    int32 = 2
	DefaultServiceType       = corev1.ServiceTypeLoadBalancer
)

// labelComponent tells the proxy pods apart from anything else a Gateway's labels might select.
const (
	labelComponent = "app.kubernetes.io/component"
	componentProxy = "proxy"
	containerName  = "proxy"
)

// ObjectName is the name of every object made for lb (providers.ResourceName).
func ObjectName(lb *providers.LoadBalancer) string { return providers.ResourceName(lb) }

// params are lb's in-cluster parameters with defaults filled in; the model's Parameters were
// validated by Capabilities when the class was accepted, so a bad value here falls back to the
// defaults.
func params(lb *providers.LoadBalancer) (replicas int32, svcType corev1.ServiceType) {
	replicas, svcType = DefaultReplicas, DefaultServiceType
	in, err := decodeParams(lb.Parameters)
	if err != nil || in == nil {
		return replicas, svcType
	}
	if in.Replicas != nil && *in.Replicas > 0 {
		replicas = *in.Replicas
	}
	if in.ServiceType != "" {
		svcType = corev1.ServiceType(in.ServiceType)
	}
	return replicas, svcType
}

// decodeParams reads the GatewayClassConfig's spec.inCluster; nil when unset.
func decodeParams(raw json.RawMessage) (*v1alpha1.InClusterOptions, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var in v1alpha1.InClusterOptions
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("inCluster parameters: %w", err)
	}
	if in.Replicas != nil && (*in.Replicas < 1 || *in.Replicas > 100) {
		return nil, fmt.Errorf("inCluster.replicas must be within 1..100, not %d", *in.Replicas)
	}
	switch corev1.ServiceType(in.ServiceType) {
	case "", corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort, corev1.ServiceTypeClusterIP:
	default:
		return nil, fmt.Errorf("inCluster.serviceType must be LoadBalancer, NodePort or ClusterIP, not %q", in.ServiceType)
	}
	return &in, nil
}

// selector selects the proxy pods of lb; it is immutable on a Deployment, so it holds only
// labels that never change for a gateway key.
func selector(lb *providers.LoadBalancer) map[string]string {
	s := providers.OwnerSelector(lb.Gateway)
	s[labelComponent] = componentProxy
	return s
}

func objectMeta(lb *providers.LoadBalancer) (labels, annotations map[string]string) {
	labels = providers.ResourceLabels(lb)
	labels[labelComponent] = componentProxy
	return labels, providers.ResourceAnnotations(lb)
}

// ownerRef makes the Gateway in cluster the controller of an object, when its UID is known.
func ownerRef(lb *providers.LoadBalancer, cluster string) []*metav1ac.OwnerReferenceApplyConfiguration {
	uid := lb.GatewayUIDs[cluster]
	if uid == "" {
		return nil
	}
	// No blockOwnerDeletion: it would need update rights on gateways/finalizers for nothing.
	return []*metav1ac.OwnerReferenceApplyConfiguration{metav1ac.OwnerReference().
		WithAPIVersion("gateway.networking.k8s.io/v1").WithKind("Gateway").
		WithName(lb.Name).WithUID(types.UID(uid)).WithController(true)}
}

func portName(p providers.Port) string {
	return fmt.Sprintf("%s-%d", strings.ToLower(string(p.Transport)), p.Port)
}

func protocol(p providers.Port) corev1.Protocol {
	if p.Transport == providers.TransportUDP {
		return corev1.ProtocolUDP
	}
	return corev1.ProtocolTCP
}

// buildServiceAccount gives the proxy an identity of its own, so it never runs as the
// namespace's default account (which others may have granted rights to). It gets no Role: the
// proxy reads nothing from the API, its config comes over xDS.
func buildServiceAccount(lb *providers.LoadBalancer, cluster string) *corev1ac.ServiceAccountApplyConfiguration {
	labels, annotations := objectMeta(lb)
	return corev1ac.ServiceAccount(ObjectName(lb), lb.Namespace).
		WithLabels(labels).WithAnnotations(annotations).
		WithOwnerReferences(ownerRef(lb, cluster)...).
		WithAutomountServiceAccountToken(false)
}

// proxyUser is the non-root user and group of fleetgate's image (image/build.go).
const proxyUser = 65532

func (p *Provider) buildDeployment(lb *providers.LoadBalancer, cluster string) *appsv1ac.DeploymentApplyConfiguration {
	name := ObjectName(lb)
	labels, annotations := objectMeta(lb)
	replicas, _ := params(lb)
	podLabels, _ := objectMeta(lb)
	maps.Copy(podLabels, selector(lb))

	ctr := corev1ac.Container().WithName(containerName).WithImage(p.opts.Image).
		WithArgs(p.args(lb)...).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	for _, port := range lb.Ports {
		ctr.WithPorts(corev1ac.ContainerPort().WithName(portName(port)).
			WithContainerPort(port.Port).WithProtocol(protocol(port)))
	}
	pod := corev1ac.PodSpec().
		WithServiceAccountName(name).
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			// The image's non-root user; fsGroup makes the 0440 credentials volume its group's,
			// so the proxy can read its xDS certificate (a real kubelet refused it without).
			WithRunAsUser(proxyUser).WithRunAsGroup(proxyUser).WithFSGroup(proxyUser).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)).
			// Listeners on 80 and 443 without root or NET_BIND_SERVICE; the sysctl is namespaced and safe.
			WithSysctls(corev1ac.Sysctl().WithName("net.ipv4.ip_unprivileged_port_start").WithValue("0")))
	if p.opts.Credentials != nil {
		mountCredentials(lb, pod, ctr)
	}
	// WithContainers copies the container, so it goes in last.
	pod.WithContainers(ctr)
	if p.opts.Customize != nil {
		p.opts.Customize(lb, cluster, pod)
	}
	return appsv1ac.Deployment(name, lb.Namespace).
		WithLabels(labels).WithAnnotations(annotations).
		WithOwnerReferences(ownerRef(lb, cluster)...).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selector(lb))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(podLabels).
				WithAnnotations(maps.Clone(lb.Annotations)).
				WithSpec(pod)))
}

// addressPlan is how the requested spec.addresses map onto the Service, and what cannot.
type addressPlan struct {
	loadBalancerIP string
	externalIPs    []string
	// reason and message say why a requested address cannot be honoured; empty when all can.
	reason, message string
}

// planAddresses maps requested addresses onto a Service of type t: one IP becomes
// spec.loadBalancerIP of a LoadBalancer Service, IPs become spec.externalIPs of the other types.
// Hostnames cannot be requested from a Service at all.
func planAddresses(lb *providers.LoadBalancer, t corev1.ServiceType) addressPlan {
	var plan addressPlan
	fail := func(reason, format string, args ...any) {
		if plan.reason == "" {
			plan.reason, plan.message = reason, fmt.Sprintf(format, args...)
		}
	}
	for _, a := range lb.Addresses {
		switch a.Type {
		case providers.AddressTypeIPAddress, "":
		case providers.AddressTypeHostname:
			fail(providers.ReasonUnsupportedAddress, "the in-cluster provider cannot request Hostname addresses (%q); a Service only takes IPs", a.Value)
			continue
		default:
			fail(providers.ReasonUnsupportedAddress, "address type %q is not supported by the in-cluster provider", a.Type)
			continue
		}
		if a.Value == "" {
			// An IPAddress without a value asks for any address, which is what we get anyway.
			continue
		}
		ip := net.ParseIP(a.Value)
		if ip == nil {
			fail(providers.ReasonAddressNotUsable, "requested address %q is not an IP address", a.Value)
			continue
		}
		switch {
		case t != corev1.ServiceTypeLoadBalancer:
			plan.externalIPs = append(plan.externalIPs, ip.String())
		case plan.loadBalancerIP == "":
			plan.loadBalancerIP = ip.String()
		default:
			fail(providers.ReasonUnsupportedAddress, "a LoadBalancer Service takes one requested IP, got a second one (%s)", a.Value)
		}
	}
	return plan
}

func buildService(lb *providers.LoadBalancer, cluster string, plan addressPlan) *corev1ac.ServiceApplyConfiguration {
	labels, annotations := objectMeta(lb)
	_, t := params(lb)
	spec := corev1ac.ServiceSpec().WithType(t).WithSelector(selector(lb))
	for _, port := range lb.Ports {
		spec.WithPorts(corev1ac.ServicePort().WithName(portName(port)).WithProtocol(protocol(port)).
			WithPort(port.Port).WithTargetPort(intstr.FromInt32(port.Port)))
	}
	if plan.loadBalancerIP != "" {
		spec.WithLoadBalancerIP(plan.loadBalancerIP)
	}
	if len(plan.externalIPs) > 0 {
		spec.WithExternalIPs(plan.externalIPs...)
	}
	return corev1ac.Service(ObjectName(lb), lb.Namespace).
		WithLabels(labels).WithAnnotations(annotations).
		WithOwnerReferences(ownerRef(lb, cluster)...).
		WithSpec(spec)
}
