//go:build tools

// Package tools pins kube-apiserver so `go mod tidy` keeps its dependencies;
// the binary itself is built with `go build k8s.io/kubernetes/cmd/kube-apiserver`.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
