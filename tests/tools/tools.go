//go:build tools

// Package tools pins the Kubernetes binaries the test bed builds from source: the control plane
// (make testbed) and a node's kubelet, kube-proxy and kube-scheduler (make testbed-node).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
