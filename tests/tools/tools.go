//go:build tools

// Package tools pins the Kubernetes control-plane binaries the test bed builds from source.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
