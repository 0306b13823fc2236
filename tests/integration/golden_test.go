package integration

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetgate/fleetgate/controllers/translate"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// TestGoldenStatusesOnAPIServer applies golden translation inputs to a real API server, runs the
// operator, and checks that the statuses read back equal the golden expectations: what the pure
// translation promises is what users see.
func TestGoldenStatusesOnAPIServer(t *testing.T) {
	for _, name := range []string{
		"kitchen-sink", // every listener protocol and route kind, good and bad certificates, grants
	} {
		t.Run(name, func(t *testing.T) {
			c := testbed.ForTest(t, "hub")[0]
			startOperator(t, c)
			dir := filepath.Join(testbed.RepoRoot(), "controllers", "translate", "testdata")
			applyGoldenInput(t, c, filepath.Join(dir, name+".in.yaml"))
			var want translate.Result
			data, err := os.ReadFile(filepath.Join(dir, name+".out.yaml"))
			must(t, err)
			must(t, yaml.Unmarshal(data, &want))
			testbed.Eventually(t, 30*time.Second, func() error { return compareStatuses(t, c, &want) })
		})
	}
}

// applyGoldenInput creates every object of a golden input, with the fixture certificates filled in
// and the namespaces it uses created first.
func applyGoldenInput(t *testing.T, c *testbed.Cluster, path string) {
	t.Helper()
	certs := filepath.Join(filepath.Dir(path), "certs")
	crt, err := os.ReadFile(filepath.Join(certs, "tls.crt"))
	must(t, err)
	key, err := os.ReadFile(filepath.Join(certs, "tls.key"))
	must(t, err)
	data, err := os.ReadFile(path)
	must(t, err)
	data = bytes.ReplaceAll(data, []byte("__TLS_CRT__"), []byte(base64.StdEncoding.EncodeToString(crt)))
	data = bytes.ReplaceAll(data, []byte("__TLS_KEY__"), []byte(base64.StdEncoding.EncodeToString(key)))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if ns := obj.GetNamespace(); ns != "" {
			err := c.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
		// The API server owns these; golden inputs set them only for the pure translation.
		obj.SetGeneration(0)
		obj.SetCreationTimestamp(metav1.Time{})
		delete(obj.Object, "status")
		if err := c.Client.Create(t.Context(), &obj); err != nil {
			t.Fatalf("creating %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

var ignoreTransitionTime = cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")

// defaultedParentRef fills in the group and kind the CRD schema defaults: golden inputs are written
// by hand and skip API-server defaulting, so the echoed parentRef lacks them there.
var defaultedParentRef = cmp.Transformer("defaultParentRef", func(r gwv1.ParentReference) gwv1.ParentReference {
	if r.Group == nil {
		g := gwv1.Group(gwv1.GroupName)
		r.Group = &g
	}
	if r.Kind == nil {
		k := gwv1.Kind("Gateway")
		r.Kind = &k
	}
	return r
})

// compareStatuses reads every object the golden result speaks of and diffs its status.
func compareStatuses(t *testing.T, c *testbed.Cluster, want *translate.Result) error {
	ctx := t.Context()
	var errs []error
	for _, w := range want.GatewayClasses {
		var gc gwv1.GatewayClass
		if err := c.Client.Get(ctx, client.ObjectKey{Name: w.Ref.Name}, &gc); err != nil {
			return err
		}
		if d := cmp.Diff(w.Conditions, gc.Status.Conditions, ignoreTransitionTime); d != "" {
			errs = append(errs, fmt.Errorf("GatewayClass %s conditions (-golden +server):\n%s", w.Ref.Name, d))
		}
	}
	for _, w := range want.Gateways {
		var gw gwv1.Gateway
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: w.Ref.Namespace, Name: w.Ref.Name}, &gw); err != nil {
			return err
		}
		got := translate.GatewayStatus{Ref: w.Ref, Generation: gw.Generation, Gateway: w.Gateway,
			Addresses: gw.Status.Addresses, Conditions: gw.Status.Conditions, Listeners: gw.Status.Listeners}
		if d := cmp.Diff(w, got, ignoreTransitionTime, cmpopts.EquateEmpty()); d != "" {
			errs = append(errs, fmt.Errorf("Gateway %s/%s status (-golden +server):\n%s", w.Ref.Namespace, w.Ref.Name, d))
		}
	}
	for _, w := range want.Routes {
		obj, parents, err := newRoute(w.Ref.Kind)
		if err != nil {
			return err
		}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: w.Ref.Namespace, Name: w.Ref.Name}, obj); err != nil {
			return err
		}
		if d := cmp.Diff(w.Parents, *parents(), ignoreTransitionTime, defaultedParentRef, cmpopts.EquateEmpty()); d != "" {
			errs = append(errs, fmt.Errorf("%s %s/%s parents (-golden +server):\n%s", w.Ref.Kind, w.Ref.Namespace, w.Ref.Name, d))
		}
	}
	return errors.Join(errs...)
}

func newRoute(kind string) (client.Object, func() *[]gwv1.RouteParentStatus, error) {
	switch kind {
	case "HTTPRoute":
		r := &gwv1.HTTPRoute{}
		return r, func() *[]gwv1.RouteParentStatus { return &r.Status.Parents }, nil
	case "GRPCRoute":
		r := &gwv1.GRPCRoute{}
		return r, func() *[]gwv1.RouteParentStatus { return &r.Status.Parents }, nil
	case "TLSRoute":
		r := &gwv1.TLSRoute{}
		return r, func() *[]gwv1.RouteParentStatus { return &r.Status.Parents }, nil
	case "TCPRoute":
		r := &gwv1.TCPRoute{}
		return r, func() *[]gwv1.RouteParentStatus { return &r.Status.Parents }, nil
	case "UDPRoute":
		r := &gwv1.UDPRoute{}
		return r, func() *[]gwv1.RouteParentStatus { return &r.Status.Parents }, nil
	}
	return nil, nil, fmt.Errorf("unknown route kind %q", kind)
}
