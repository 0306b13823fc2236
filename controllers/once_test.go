package controllers

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// TestTranslateOnce: the hub's objects become one model per Gateway of an accepted class, read as
// member hub; a failing read is an error, not an empty result.
func TestTranslateOnce(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&v1alpha1.GatewayClassConfig{ObjectMeta: metav1.ObjectMeta{Name: "aws"},
			Spec: v1alpha1.GatewayClassConfigSpec{Provider: v1alpha1.ProviderAWS, Scope: v1alpha1.ScopeCluster}},
		&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "aws-alb"}, Spec: gwv1.GatewayClassSpec{
			ControllerName: v1alpha1.ControllerName,
			ParametersRef:  &gwv1.ParametersReference{Group: gwv1.Group(v1alpha1.GroupVersion.Group), Kind: "GatewayClassConfig", Name: "aws"}}},
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}, Spec: gwv1.GatewaySpec{
			GatewayClassName: "aws-alb",
			Listeners:        []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}},
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "other"}, Spec: gwv1.GatewaySpec{
			GatewayClassName: "not-ours",
			Listeners:        []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}},
	}
	tests := []struct {
		name    string
		list    func() error
		want    []string // gateway keys of the models
		wantErr bool
	}{
		{name: "hub objects", want: []string{"hub/apps/web"}},
		{name: "read fails", list: func() error { return errors.New("forbidden") }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
			if tt.list != nil {
				b = b.WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, o ...client.ListOption) error {
					return tt.list()
				}})
			}
			res, err := TranslateOnce(t.Context(), b.Build())
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			var got []string
			for _, lb := range res.LoadBalancers {
				got = append(got, lb.Gateway)
				if lb.Provider != string(v1alpha1.ProviderAWS) || len(lb.Clusters) != 1 || lb.Clusters[0] != v1alpha1.HubCluster {
					t.Errorf("model %s: provider %q clusters %v, want aws in hub", lb.Gateway, lb.Provider, lb.Clusters)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("models %v, want %v", got, tt.want)
			}
		})
	}
}
