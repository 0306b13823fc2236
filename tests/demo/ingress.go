package main

import (
	"context"
	"fmt"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyIngress creates IngressClass fleetgate and Ingress default/echo routing ingress.example.com
// to the echo Service, and returns the address fleetgate writes to the Ingress status once its
// proxy serves it.
func applyIngress(ctx context.Context, c client.Client) (string, error) {
	class := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetgate"},
		Spec:       networkingv1.IngressClassSpec{Controller: "fleetgate.dev/ingress-controller"},
	}
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo"},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("fleetgate"),
			Rules: []networkingv1.IngressRule{{Host: "ingress.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "echo", Port: networkingv1.ServiceBackendPort{Name: "http"}}},
				}}},
			}}},
		},
	}
	for _, obj := range []client.Object{class, ing} {
		if err := c.Create(ctx, obj); err != nil {
			return "", fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ing), ing); err == nil {
			if lb := ing.Status.LoadBalancer.Ingress; len(lb) > 0 && lb[0].IP != "" {
				return lb[0].IP, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no status.loadBalancer address on Ingress default/echo: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
