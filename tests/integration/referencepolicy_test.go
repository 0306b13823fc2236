package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
	"github.com/fleetgate/fleetgate/tests/testbed"
)

// legacyReferencePolicyCRD is the served shape of the v1alpha2 ReferencePolicy CRD of Gateway API
// v0.5, reduced to what the API server needs.
const legacyReferencePolicyCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: referencepolicies.gateway.networking.k8s.io
  annotations: {api-approved.kubernetes.io: "https://github.com/kubernetes-sigs/gateway-api/pull/891"}
spec:
  group: gateway.networking.k8s.io
  names: {kind: ReferencePolicy, listKind: ReferencePolicyList, plural: referencepolicies, singular: referencepolicy}
  scope: Namespaced
  versions:
  - name: v1alpha2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestLegacyReferencePolicy: where the old ReferencePolicy CRD is installed, a ReferencePolicy
// permits a cross-namespace backendRef exactly as a ReferenceGrant would.
func TestLegacyReferencePolicy(t *testing.T) {
	c := testbed.ForTest(t, "hub")[0]
	ctx := t.Context()
	var crd unstructured.Unstructured
	must(t, yaml.Unmarshal([]byte(legacyReferencePolicyCRD), &crd.Object))
	must(t, c.Client.Create(ctx, &crd))
	testbed.Eventually(t, 10*time.Second, func() error {
		must(t, c.Client.Get(ctx, client.ObjectKeyFromObject(&crd), &crd))
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, raw := range conds {
			if cond, _ := raw.(map[string]any); cond["type"] == "Established" && cond["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("CRD not established: %v", conds)
	})

	for _, ns := range []string{"apps", "backends"} {
		must(t, c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	must(t, testbed.CreateClass(ctx, c.Client, "fleetgate", v1alpha1.ScopeCluster))
	must(t, c.Client.Create(ctx, &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "fleetgate",
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}},
	}))
	must(t, c.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "backends", Name: "api"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}))
	port := gwv1.PortNumber(8080)
	backendNS := gwv1.Namespace("backends")
	must(t, c.Client.Create(ctx, &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
			Rules: []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
				BackendObjectReference: gwv1.BackendObjectReference{Name: "api", Namespace: &backendNS, Port: &port},
			}}}}},
		},
	}))

	startOperator(t, c)
	resolvedRefs := func(status metav1.ConditionStatus, reason gwv1.RouteConditionReason) func() error {
		return func() error {
			var r gwv1.HTTPRoute
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "web"}, &r); err != nil {
				return err
			}
			for _, p := range r.Status.Parents {
				cond := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionResolvedRefs))
				if p.ControllerName == v1alpha1.ControllerName && cond != nil && cond.Status == status && cond.Reason == string(reason) {
					return nil
				}
			}
			return fmt.Errorf("route parents %+v, want ResolvedRefs=%s/%s", r.Status.Parents, status, reason)
		}
	}
	testbed.Eventually(t, 20*time.Second, resolvedRefs(metav1.ConditionFalse, gwv1.RouteReasonRefNotPermitted))

	var policy unstructured.Unstructured
	must(t, yaml.Unmarshal([]byte(`
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: ReferencePolicy
metadata: {namespace: backends, name: allow-apps}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: apps}]
  to: [{group: "", kind: Service}]
`), &policy.Object))
	must(t, c.Client.Create(ctx, &policy))
	testbed.Eventually(t, 10*time.Second, resolvedRefs(metav1.ConditionTrue, gwv1.RouteReasonResolvedRefs))
}
