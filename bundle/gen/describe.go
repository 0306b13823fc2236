package main

import (
	_ "embed"
	"encoding/base64"

	"github.com/fleetgate/fleetgate/bundle"
)

//go:embed icon.svg
var icon []byte

func iconBase64() string { return base64.StdEncoding.EncodeToString(icon) }

// description is the CSV's long description (markdown), shown by OperatorHub.
const description = `fleetgate implements the Kubernetes Gateway API (GatewayClass, Gateway, HTTPRoute, GRPCRoute,
TLSRoute, TCPRoute, UDPRoute, ReferenceGrant), Ingress and Services of type LoadBalancer for a fleet
of clusters. It turns them into real load balancers — AWS ELBv2 (NLB/ALB), GCP load balancers, or its
own in-cluster Go proxy — and writes addresses and conditions back into every member cluster.

## Prerequisites

fleetgate does **not** own or ship these CRDs; the platform installs them (in the hub and in every member):

* Gateway API v1.6 (experimental channel: TLSRoute, TCPRoute, UDPRoute, ListenerSet, BackendTLSPolicy)
* Multi-Cluster Services API (ServiceExport, ServiceImport), for fleet backends

When one is missing, fleetgate says so (condition, Event, log) and starts using it when it appears,
without a restart.

## Getting started

1. Create a GatewayClassConfig (provider incluster, aws or gcp; scope Cluster or Fleet).
2. Create a GatewayClass with controllerName fleetgate.dev/gateway-controller whose parametersRef names it.
3. Add member clusters with MemberCluster objects, each naming a kubeconfig Secret in the operator's namespace.

The operator image is also the proxy image (` + "`fleetgate dataplane`" + `).
`

// descriptions are the owned CRDs' texts and UI descriptors, by kind.
var descriptions = map[string]bundle.CRDDescription{
	"GatewayClassConfig": {
		DisplayName: "Gateway Class Config",
		Description: "The provider (incluster, aws, gcp), scope (Cluster or Fleet) and provider options of the GatewayClasses whose parametersRef names it.",
		Resources: []bundle.APIResource{
			{Name: "", Kind: "Deployment", Version: "v1"},
			{Name: "", Kind: "Service", Version: "v1"},
			{Name: "", Kind: "ServiceAccount", Version: "v1"},
			{Name: "", Kind: "Secret", Version: "v1"},
		},
		SpecDescriptors: []bundle.Descriptor{
			{Path: "provider", DisplayName: "Provider", Description: "What builds the load balancers: incluster, aws or gcp.",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:select:incluster", "urn:alm:descriptor:com.tectonic.ui:select:aws", "urn:alm:descriptor:com.tectonic.ui:select:gcp"}},
			{Path: "scope", DisplayName: "Scope", Description: "Cluster: a load balancer per Gateway; Fleet: one per namespace/name across members.",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:select:Cluster", "urn:alm:descriptor:com.tectonic.ui:select:Fleet"}},
			{Path: "inCluster.replicas", DisplayName: "Proxy replicas", Description: "Replicas of each Gateway's proxy Deployment.",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:podCount", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:incluster"}},
			{Path: "inCluster.serviceType", DisplayName: "Proxy Service type",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:select:LoadBalancer", "urn:alm:descriptor:com.tectonic.ui:select:NodePort", "urn:alm:descriptor:com.tectonic.ui:select:ClusterIP", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:incluster"}},
			{Path: "aws.loadBalancerType", DisplayName: "AWS load balancer type", Description: "application (ALB) or network (NLB).",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:select:application", "urn:alm:descriptor:com.tectonic.ui:select:network", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:aws"}},
			{Path: "aws.scheme", DisplayName: "AWS scheme",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:select:internet-facing", "urn:alm:descriptor:com.tectonic.ui:select:internal", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:aws"}},
			{Path: "aws.region", DisplayName: "AWS region",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:text", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:aws"}},
			{Path: "aws.dryRun", DisplayName: "Dry run", Description: "Show the AWS calls instead of making them.",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:booleanSwitch", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:aws"}},
			{Path: "gcp.project", DisplayName: "GCP project",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:text", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:gcp"}},
			{Path: "gcp.loadBalancerType", DisplayName: "GCP load balancer type", Description: "global or regional (Application Load Balancers) or network (passthrough).",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:select:global", "urn:alm:descriptor:com.tectonic.ui:select:regional", "urn:alm:descriptor:com.tectonic.ui:select:network", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:gcp"}},
			{Path: "gcp.region", DisplayName: "GCP region",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:text", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:gcp"}},
			{Path: "gcp.dryRun", DisplayName: "Dry run", Description: "Show the GCP calls instead of making them.",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:booleanSwitch", "urn:alm:descriptor:com.tectonic.ui:fieldDependency:provider:gcp"}},
			{Path: "proxy", DisplayName: "Proxy limits", Description: "Timeouts, connection and retry limits of the proxies.",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:advanced"}},
		},
		StatusDescriptors: []bundle.Descriptor{
			{Path: "conditions", DisplayName: "Conditions", Description: "Accepted: whether the config is valid for its provider.",
				XDescriptors: []string{"urn:alm:descriptor:io.kubernetes.conditions"}},
		},
	},
	"MemberCluster": {
		DisplayName: "Member Cluster",
		Description: "A cluster of the fleet: how fleetgate reaches it (a kubeconfig Secret), where it runs, and its share of fleet traffic.",
		SpecDescriptors: []bundle.Descriptor{
			{Path: "kubeconfigSecretRef.name", DisplayName: "Kubeconfig Secret", Description: "A Secret in the operator's namespace holding the member's kubeconfig.",
				XDescriptors: []string{"urn:alm:descriptor:io.kubernetes:Secret"}},
			{Path: "kubeconfigSecretRef.key", DisplayName: "Kubeconfig key",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:text", "urn:alm:descriptor:com.tectonic.ui:advanced"}},
			{Path: "region", DisplayName: "Region", XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:text"}},
			{Path: "zones", DisplayName: "Zones", Description: "Availability zones of the cluster's nodes."},
			{Path: "weight", DisplayName: "Weight", Description: "Share of fleet-backend traffic, relative to other members.",
				XDescriptors: []string{"urn:alm:descriptor:com.tectonic.ui:number"}},
		},
		StatusDescriptors: []bundle.Descriptor{
			{Path: "conditions", DisplayName: "Conditions", Description: "Ready: the member's API server answers and its caches are synced.",
				XDescriptors: []string{"urn:alm:descriptor:io.kubernetes.conditions"}},
			{Path: "kubernetesVersion", DisplayName: "Kubernetes version", XDescriptors: []string{"urn:alm:descriptor:text"}},
		},
	},
}
