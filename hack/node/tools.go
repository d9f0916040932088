//go:build tools

// Package tools pins the node's Kubernetes binaries (kubelet, kube-controller-manager,
// kube-scheduler) at the same k8s.io/kubernetes release as hack/control-plane/kube-apiserver,
// so `go mod tidy` keeps their dependencies; each is built with `go build k8s.io/kubernetes/cmd/<name>`.
// A separate module keeps the kube-apiserver cache key (its go.mod and go.sum) unchanged.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
