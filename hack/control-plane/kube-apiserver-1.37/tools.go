//go:build tools

// Package tools pins kube-apiserver 1.37 (the newest released minor) and kubectl (for checking
// kubeconfigs and for people using the local landscape) so `go mod tidy` keeps their
// dependencies; the binaries are built with `go build k8s.io/kubernetes/cmd/kube-apiserver` and
// `.../cmd/kubectl`.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
