package controllers

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	dnsv1a1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1a2 "sigs.k8s.io/gateway-api/apis/v1alpha2"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	mcsv1a1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	v1alpha1 "github.com/fleetgate/fleetgate/api/v1alpha1"
)

// NewScheme returns a scheme holding every type fleetgate reads or writes.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		gwv1.Install,
		gwv1b1.Install,
		gwv1a2.Install,
		mcsv1a1.Install,
		v1alpha1.AddToScheme,
		dnsv1a1.AddToScheme,
		// external-dns registers its types without the options kinds (ListOptions, DeleteOptions)
		// a client needs to list and delete them.
		func(s *runtime.Scheme) error { metav1.AddToGroupVersion(s, dnsv1a1.GroupVersion); return nil },
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}
