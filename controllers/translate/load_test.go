package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/controllers/snapshot"
)

// clusterAnnotation names the member cluster of an object in a golden input; default "hub".
const clusterAnnotation = "fleetgate.dev/cluster"

// fixtures are substituted into inputs so that test files need not embed PEM blobs.
type fixtures struct{ crt, key []byte }

// loadSnapshot decodes a multi-document YAML of Kubernetes objects into a sorted snapshot.
// Secret stringData is folded into data as the API server would.
func loadSnapshot(in []byte, fx fixtures) (*snapshot.Snapshot, error) {
	in = bytes.ReplaceAll(in, []byte("__TLS_CRT__"), []byte(base64.StdEncoding.EncodeToString(fx.crt)))
	in = bytes.ReplaceAll(in, []byte("__TLS_KEY__"), []byte(base64.StdEncoding.EncodeToString(fx.key)))
	s := &snapshot.Snapshot{}
	for i, doc := range splitYAML(in) {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(js) == "null" {
			continue
		}
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(js, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		cluster := head.Metadata.Annotations[clusterAnnotation]
		if cluster == "" {
			cluster = v1alpha1.HubCluster
		}
		if err := addObject(s, head.Kind, cluster, js, fx); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i, head.Kind, err)
		}
	}
	return s.Sort(), nil
}

func splitYAML(in []byte) [][]byte {
	var docs [][]byte
	var cur []string
	for _, line := range strings.Split(string(in), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			docs = append(docs, []byte(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, []byte(strings.Join(cur, "\n")))
}

func decode[T any](js []byte, cluster string) (snapshot.Object[T], error) {
	var v T
	if err := json.Unmarshal(js, &v); err != nil {
		return snapshot.Object[T]{}, err
	}
	return snapshot.Object[T]{Cluster: cluster, Obj: &v}, nil
}

func add[T any](list *[]snapshot.Object[T], js []byte, cluster string) error {
	o, err := decode[T](js, cluster)
	if err != nil {
		return err
	}
	*list = append(*list, o)
	return nil
}

func addObject(s *snapshot.Snapshot, kind, cluster string, js []byte, fx fixtures) error {
	switch kind {
	case "GatewayClass":
		return add(&s.GatewayClasses, js, cluster)
	case "GatewayClassConfig":
		return add[v1alpha1.GatewayClassConfig](&s.ClassConfigs, js, cluster)
	case "Gateway":
		return add(&s.Gateways, js, cluster)
	case "ListenerSet":
		return add(&s.ListenerSets, js, cluster)
	case "HTTPRoute":
		return add(&s.HTTPRoutes, js, cluster)
	case "GRPCRoute":
		return add(&s.GRPCRoutes, js, cluster)
	case "TLSRoute":
		return add(&s.TLSRoutes, js, cluster)
	case "TCPRoute":
		return add(&s.TCPRoutes, js, cluster)
	case "UDPRoute":
		return add(&s.UDPRoutes, js, cluster)
	case "ReferenceGrant":
		return add[gwv1b1.ReferenceGrant](&s.ReferenceGrants, js, cluster)
	case "ReferencePolicy":
		var u map[string]any
		if err := json.Unmarshal(js, &u); err != nil {
			return err
		}
		g, err := snapshot.ReferenceGrantFromLegacy(u)
		if err != nil {
			return err
		}
		s.ReferenceGrants = append(s.ReferenceGrants, snapshot.Object[gwv1b1.ReferenceGrant]{Cluster: cluster, Obj: g})
		return nil
	case "Service":
		return add[corev1.Service](&s.Services, js, cluster)
	case "EndpointSlice":
		return add[discoveryv1.EndpointSlice](&s.EndpointSlices, js, cluster)
	case "ServiceImport":
		return add[mcsv1a1.ServiceImport](&s.ServiceImports, js, cluster)
	case "ServiceExport":
		return add[mcsv1a1.ServiceExport](&s.ServiceExports, js, cluster)
	case "Secret":
		o, err := decode[corev1.Secret](js, cluster)
		if err != nil {
			return err
		}
		for k, v := range o.Obj.StringData {
			if o.Obj.Data == nil {
				o.Obj.Data = map[string][]byte{}
			}
			o.Obj.Data[k] = []byte(v)
		}
		o.Obj.StringData = nil
		s.Secrets = append(s.Secrets, o)
		return nil
	case "ConfigMap":
		// "fixture tls.crt" stands for the PEM of the fixture certificate, usable as a CA bundle.
		o, err := decode[corev1.ConfigMap](js, cluster)
		if err != nil {
			return err
		}
		for k, v := range o.Obj.Data {
			if v == "fixture tls.crt" {
				o.Obj.Data[k] = string(fx.crt)
			}
		}
		s.ConfigMaps = append(s.ConfigMaps, o)
		return nil
	case "BackendTLSPolicy":
		return add(&s.BackendTLSPolicies, js, cluster)
	case "Namespace":
		return add[corev1.Namespace](&s.Namespaces, js, cluster)
	case "IngressClass":
		return add[networkingv1.IngressClass](&s.IngressClasses, js, cluster)
	case "Ingress":
		return add[networkingv1.Ingress](&s.Ingresses, js, cluster)
	}
	return fmt.Errorf("unknown kind %q", kind)
}
