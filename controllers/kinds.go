package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/fleet"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// kind is one input kind of translation: the one place that says how fleetgate watches it, reads it
// into the snapshot, counts it, tells its updates apart and writes its status.
type kind struct {
	// name is the Kind, the snapshot metric's label and the status writer's key (ObjectRef.Kind).
	name string
	// object returns an empty object of the kind, to watch it and to read one.
	object func() client.Object
	// read lists the kind from every cluster into its snapshot field.
	read func(ctx context.Context, sources []ClusterReader, s *snapshot.Snapshot) error
	// list lists the kind from one cluster (the cache's objects themselves: read only).
	list func(ctx context.Context, src ClusterReader) ([]client.Object, error)
	// count is the number of the kind's objects in a snapshot.
	count func(s *snapshot.Snapshot) int
	// generationGated kinds bump metadata.generation on every change translation reads: an update
	// that keeps generation, labels and annotations is a status write and needs no new pass.
	generationGated bool
	// status says how fleetgate writes the kind's status; nil when it writes none.
	status *statusKind
	// crd names the CRD serving the kind when it is a prerequisite fleetgate does not install: a
	// cluster without it is served all the same, the kind read as empty until the CRD appears.
	// Another optional kind (say external-dns's DNSEndpoint) is one more entry with its CRD.
	crd string
}

// Reading every kind, and writing the status of those that have one (the status writer updates
// /status and never reads it; the local provider patches a LoadBalancer Service's):
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses;gateways;listenersets;httproutes;grpcroutes;tlsroutes;tcproutes;udproutes;referencegrants;referencepolicies;backendtlspolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gatewayclasses/status;gateways/status;listenersets/status;httproutes/status;grpcroutes/status;tlsroutes/status;tcproutes/status;udproutes/status;backendtlspolicies/status,verbs=update
// +kubebuilder:rbac:groups=fleetgate.dev,resources=gatewayclassconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services;namespaces;secrets;configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=serviceimports;serviceexports,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses;ingressclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses/status,verbs=update
// +kubebuilder:rbac:groups="",resources=services/status,verbs=update;patch

// kinds is the table of every kind translation reads. Adding a kind is one entry here, its field
// in snapshot.Snapshot, and the translation code that reads it.
func kinds() []kind {
	return []kind{
		listed("GatewayClass",
			func(l *gwv1.GatewayClassList) []gwv1.GatewayClass { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.GatewayClass] { return &s.GatewayClasses }).
			gated().writes(classStatus()).
			requires("gatewayclasses.gateway.networking.k8s.io"),
		listed("GatewayClassConfig",
			func(l *v1alpha1.GatewayClassConfigList) []v1alpha1.GatewayClassConfig { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[v1alpha1.GatewayClassConfig] { return &s.ClassConfigs }).
			gated(),
		listed("Gateway",
			func(l *gwv1.GatewayList) []gwv1.Gateway { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.Gateway] { return &s.Gateways }).
			gated().writes(gatewayStatus()).
			requires("gateways.gateway.networking.k8s.io"),
		listed("ListenerSet",
			func(l *gwv1.ListenerSetList) []gwv1.ListenerSet { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.ListenerSet] { return &s.ListenerSets }).
			gated().writes(listenerSetStatus()).
			requires("listenersets.gateway.networking.k8s.io"),
		listed("HTTPRoute",
			func(l *gwv1.HTTPRouteList) []gwv1.HTTPRoute { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.HTTPRoute] { return &s.HTTPRoutes }).
			gated().writes(routeStatus(func(r *gwv1.HTTPRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })).
			requires("httproutes.gateway.networking.k8s.io"),
		listed("GRPCRoute",
			func(l *gwv1.GRPCRouteList) []gwv1.GRPCRoute { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.GRPCRoute] { return &s.GRPCRoutes }).
			gated().writes(routeStatus(func(r *gwv1.GRPCRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })).
			requires("grpcroutes.gateway.networking.k8s.io"),
		listed("TLSRoute",
			func(l *gwv1.TLSRouteList) []gwv1.TLSRoute { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.TLSRoute] { return &s.TLSRoutes }).
			gated().writes(routeStatus(func(r *gwv1.TLSRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })).
			requires("tlsroutes.gateway.networking.k8s.io"),
		listed("TCPRoute",
			func(l *gwv1.TCPRouteList) []gwv1.TCPRoute { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.TCPRoute] { return &s.TCPRoutes }).
			gated().writes(routeStatus(func(r *gwv1.TCPRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })).
			requires("tcproutes.gateway.networking.k8s.io"),
		listed("UDPRoute",
			func(l *gwv1.UDPRouteList) []gwv1.UDPRoute { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.UDPRoute] { return &s.UDPRoutes }).
			gated().writes(routeStatus(func(r *gwv1.UDPRoute) *[]gwv1.RouteParentStatus { return &r.Status.Parents })).
			requires("udproutes.gateway.networking.k8s.io"),
		listed("ReferenceGrant",
			func(l *gwv1b1.ReferenceGrantList) []gwv1b1.ReferenceGrant { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1b1.ReferenceGrant] { return &s.ReferenceGrants }).
			gated().
			requires("referencegrants.gateway.networking.k8s.io"),
		// Services without generation: a LoadBalancer Service's status is ours, its type and
		// class are spec, and both come as plain updates.
		listed("Service",
			func(l *corev1.ServiceList) []corev1.Service { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[corev1.Service] { return &s.Services }).
			writes(serviceStatus()),
		listed("EndpointSlice",
			func(l *discoveryv1.EndpointSliceList) []discoveryv1.EndpointSlice { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[discoveryv1.EndpointSlice] { return &s.EndpointSlices }),
		listed("ServiceImport",
			func(l *mcsv1a1.ServiceImportList) []mcsv1a1.ServiceImport { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[mcsv1a1.ServiceImport] { return &s.ServiceImports }).
			requires("serviceimports.multicluster.x-k8s.io"),
		listed("ServiceExport",
			func(l *mcsv1a1.ServiceExportList) []mcsv1a1.ServiceExport { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[mcsv1a1.ServiceExport] { return &s.ServiceExports }).
			requires("serviceexports.multicluster.x-k8s.io"),
		listed("Namespace",
			func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[corev1.Namespace] { return &s.Namespaces }),
		listed("Secret",
			func(l *corev1.SecretList) []corev1.Secret { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[corev1.Secret] { return &s.Secrets }),
		listed("ConfigMap",
			func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[corev1.ConfigMap] { return &s.ConfigMaps }),
		listed("BackendTLSPolicy",
			func(l *gwv1.BackendTLSPolicyList) []gwv1.BackendTLSPolicy { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[gwv1.BackendTLSPolicy] { return &s.BackendTLSPolicies }).
			gated().writes(policyStatus()).
			requires("backendtlspolicies.gateway.networking.k8s.io"),
		listed("IngressClass",
			func(l *networkingv1.IngressClassList) []networkingv1.IngressClass { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[networkingv1.IngressClass] { return &s.IngressClasses }),
		listed("Ingress",
			func(l *networkingv1.IngressList) []networkingv1.Ingress { return l.Items },
			func(s *snapshot.Snapshot) *[]snapshot.Object[networkingv1.Ingress] { return &s.Ingresses }).
			gated().writes(ingressStatus()),
	}
}

// listed is the entry of a kind T read by listing L into the snapshot field that field points to.
func listed[T any, PT interface {
	*T
	client.Object
}, L any, PL interface {
	*L
	client.ObjectList
}](name string, items func(PL) []T, field func(*snapshot.Snapshot) *[]snapshot.Object[T]) kind {
	newList := func() PL { return PL(new(L)) }
	return kind{
		name:   name,
		object: func() client.Object { return PT(new(T)) },
		read: func(ctx context.Context, sources []ClusterReader, s *snapshot.Snapshot) error {
			return readInto(ctx, sources, newList, field(s), items)
		},
		list: func(ctx context.Context, src ClusterReader) ([]client.Object, error) {
			var s snapshot.Snapshot
			if err := readInto(ctx, []ClusterReader{src}, newList, field(&s), items); err != nil {
				return nil, err
			}
			out := make([]client.Object, len(*field(&s)))
			for i, o := range *field(&s) {
				out[i] = PT(o.Obj)
			}
			return out, nil
		},
		count: func(s *snapshot.Snapshot) int { return len(*field(s)) },
	}
}

func (k kind) gated() kind {
	k.generationGated = true
	return k
}

func (k kind) requires(crd string) kind {
	k.crd = crd
	return k
}

func (k kind) writes(s *statusKind) kind {
	k.status = s
	return k
}

// kindsByName indexes a table by kind name.
func kindsByName(table []kind) map[string]kind {
	out := make(map[string]kind, len(table))
	for _, k := range table {
		out[k.name] = k
	}
	return out
}

// fleetKinds are the kinds the fleet watches in every member, with the CRDs they require.
func fleetKinds(table []kind) []fleet.Kind {
	out := make([]fleet.Kind, 0, len(table))
	for _, k := range table {
		out = append(out, fleet.Kind{Object: k.object(), CRD: k.crd})
	}
	return out
}
