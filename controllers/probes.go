package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fleetgate/fleetgate/dataplane/ir"
	"github.com/fleetgate/fleetgate/providers"
)

// probeTTL bounds how long a looked-up readiness probe is trusted: a Deployment that changes its
// probe is followed within it, and steady state costs the API servers two reads per backend per TTL.
const probeTTL = 5 * time.Minute

// PodProbes finds a backend's readiness probe through the pod behind one of its endpoints
// (EndpointSlice targetRef), read straight from the member's API server: the caches hold no pods.
// Cloud providers' health checks follow it.
type PodProbes struct {
	clients func(cluster string) (client.Client, error)
	now     func() time.Time

	mu    sync.Mutex
	cache map[probeKey]cachedProbe
}

type probeKey struct {
	cluster, namespace, service string
	port                        uint32
}

type cachedProbe struct {
	probe   providers.HTTPProbe
	ok      bool
	expires time.Time
}

// NewPodProbes reads pods and EndpointSlices through clients (by cluster name).
func NewPodProbes(clients func(cluster string) (client.Client, error)) *PodProbes {
	return &PodProbes{clients: clients, now: time.Now, cache: map[probeKey]cachedProbe{}}
}

// ReadinessProbe is the HTTP readiness probe of the pod behind ep, an endpoint of Service
// namespace/service, when it checks ep's port; ok is false when there is none (cached for probeTTL).
func (p *PodProbes) ReadinessProbe(ctx context.Context, namespace, service string, ep ir.Endpoint) (providers.HTTPProbe, bool, error) {
	key := probeKey{ep.Cluster, namespace, service, ep.Port}
	p.mu.Lock()
	c, hit := p.cache[key]
	p.mu.Unlock()
	if hit && p.now().Before(c.expires) {
		return c.probe, c.ok, nil
	}
	probe, ok, err := p.lookup(ctx, namespace, service, ep)
	if err != nil {
		return providers.HTTPProbe{}, false, err
	}
	p.mu.Lock()
	p.cache[key] = cachedProbe{probe: probe, ok: ok, expires: p.now().Add(probeTTL)}
	p.mu.Unlock()
	return probe, ok, nil
}

func (p *PodProbes) lookup(ctx context.Context, namespace, service string, ep ir.Endpoint) (providers.HTTPProbe, bool, error) {
	c, err := p.clients(ep.Cluster)
	if err != nil {
		return providers.HTTPProbe{}, false, err
	}
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return providers.HTTPProbe{}, false, fmt.Errorf("listing the endpoints of %s/%s in cluster %s: %w", namespace, service, ep.Cluster, err)
	}
	pod := podOf(slices.Items, ep.Address)
	if pod == "" {
		return providers.HTTPProbe{}, false, nil
	}
	var po corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: pod}, &po); err != nil {
		return providers.HTTPProbe{}, false, client.IgnoreNotFound(err)
	}
	probe, ok := httpReadinessProbe(&po, int32(ep.Port))
	return probe, ok, nil
}

// podOf is the pod an EndpointSlice names for address, "" when none does.
func podOf(slices []discoveryv1.EndpointSlice, address string) string {
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
				continue
			}
			for _, a := range e.Addresses {
				if a == address {
					return e.TargetRef.Name
				}
			}
		}
	}
	return ""
}

// httpReadinessProbe is the HTTP GET readiness probe of the container serving port, when the probe
// checks that same port (by number or by the container port's name): a probe on another port says
// nothing about the one the load balancer sends to.
func httpReadinessProbe(po *corev1.Pod, port int32) (providers.HTTPProbe, bool) {
	for _, ctr := range po.Spec.Containers {
		probe := ctr.ReadinessProbe
		if probe == nil || probe.HTTPGet == nil || !probesPort(ctr, probe.HTTPGet.Port, port) {
			continue
		}
		path := probe.HTTPGet.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path // what the kubelet requests
		}
		scheme := string(probe.HTTPGet.Scheme)
		if scheme == "" {
			scheme = string(corev1.URISchemeHTTP)
		}
		return providers.HTTPProbe{Path: path, Scheme: scheme}, true
	}
	return providers.HTTPProbe{}, false
}

func probesPort(ctr corev1.Container, p intstr.IntOrString, port int32) bool {
	if p.Type == intstr.Int {
		return p.IntVal == port
	}
	for _, cp := range ctr.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort == port
		}
	}
	return false
}
