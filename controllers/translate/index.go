package translate

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// nsName is a namespaced name within one cluster.
type nsName struct{ cluster, namespace, name string }

// index holds lookup maps over a snapshot; built once per Translate call.
type index struct {
	configs    map[nsName]*v1alpha1.GatewayClassConfig
	services   map[nsName]*corev1.Service
	slices     map[nsName][]*discoveryv1.EndpointSlice // keyed by owning service name
	imports    map[nsName]*mcsv1a1.ServiceImport
	exports    map[nsName]bool
	secrets    map[nsName]*corev1.Secret
	configMaps map[nsName]*corev1.ConfigMap
	namespaces map[nsName]*corev1.Namespace
	grants     map[nsName][]*gwv1b1.ReferenceGrant // keyed by (cluster, namespace, "")
	clusters   []string
}

func newIndex(s *snapshot.Snapshot) *index {
	x := &index{
		configs:    map[nsName]*v1alpha1.GatewayClassConfig{},
		services:   map[nsName]*corev1.Service{},
		slices:     map[nsName][]*discoveryv1.EndpointSlice{},
		imports:    map[nsName]*mcsv1a1.ServiceImport{},
		exports:    map[nsName]bool{},
		secrets:    map[nsName]*corev1.Secret{},
		configMaps: map[nsName]*corev1.ConfigMap{},
		namespaces: map[nsName]*corev1.Namespace{},
		grants:     map[nsName][]*gwv1b1.ReferenceGrant{},
		clusters:   s.Clusters(),
	}
	for _, o := range s.ClassConfigs {
		if o.Obj != nil {
			x.configs[nsName{o.Cluster, "", o.Obj.Name}] = o.Obj
		}
	}
	for _, o := range s.Services {
		if o.Obj != nil {
			x.services[nsName{o.Cluster, o.Obj.Namespace, o.Obj.Name}] = o.Obj
		}
	}
	for _, o := range s.EndpointSlices {
		if o.Obj == nil {
			continue
		}
		svc := o.Obj.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		k := nsName{o.Cluster, o.Obj.Namespace, svc}
		x.slices[k] = append(x.slices[k], o.Obj)
	}
	for _, o := range s.ServiceImports {
		if o.Obj != nil {
			x.imports[nsName{o.Cluster, o.Obj.Namespace, o.Obj.Name}] = o.Obj
		}
	}
	for _, o := range s.ServiceExports {
		if o.Obj != nil {
			x.exports[nsName{o.Cluster, o.Obj.Namespace, o.Obj.Name}] = true
		}
	}
	for _, o := range s.Secrets {
		if o.Obj != nil {
			x.secrets[nsName{o.Cluster, o.Obj.Namespace, o.Obj.Name}] = o.Obj
		}
	}
	for _, o := range s.Namespaces {
		if o.Obj != nil {
			x.namespaces[nsName{o.Cluster, "", o.Obj.Name}] = o.Obj
		}
	}
	for _, o := range s.ConfigMaps {
		if o.Obj != nil {
			x.configMaps[nsName{o.Cluster, o.Obj.Namespace, o.Obj.Name}] = o.Obj
		}
	}
	for _, o := range s.ReferenceGrants {
		if o.Obj != nil {
			k := nsName{o.Cluster, o.Obj.Namespace, ""}
			x.grants[k] = append(x.grants[k], o.Obj)
		}
	}
	return x
}

// namespaceLabels returns the labels of a namespace, always including the well-known
// kubernetes.io/metadata.name label the API server sets, so selectors on it work even when the
// Namespace object is missing from the snapshot.
func (x *index) namespaceLabels(cluster, name string) map[string]string {
	out := map[string]string{corev1.LabelMetadataName: name}
	if ns := x.namespaces[nsName{cluster, "", name}]; ns != nil {
		for k, v := range ns.Labels {
			out[k] = v
		}
	}
	return out
}

// groupKind is a Kubernetes API group and kind.
type groupKind struct{ group, kind string }

// permitted reports whether an object of kind from in namespace fromNS may reference the object
// to/toNS/toName in the same cluster: always within a namespace, otherwise only through a
// ReferenceGrant (or legacy ReferencePolicy) in the target namespace.
func (x *index) permitted(cluster string, from groupKind, fromNS string, to groupKind, toNS, toName string) bool {
	if fromNS == toNS {
		return true
	}
	for _, g := range x.grants[nsName{cluster, toNS, ""}] {
		fromOK := false
		for _, f := range g.Spec.From {
			if string(f.Group) == from.group && string(f.Kind) == from.kind && string(f.Namespace) == fromNS {
				fromOK = true
				break
			}
		}
		if !fromOK {
			continue
		}
		for _, t := range g.Spec.To {
			if string(t.Group) == to.group && string(t.Kind) == to.kind && (t.Name == nil || *t.Name == "" || string(*t.Name) == toName) {
				return true
			}
		}
	}
	return false
}
