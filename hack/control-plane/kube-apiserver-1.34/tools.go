//go:build tools

// Package tools pins kube-apiserver 1.34 (the oldest minor the tests run) so `go mod tidy` keeps
// its dependencies; it is built with `go build k8s.io/kubernetes/cmd/kube-apiserver`. kubectl
// stays imported so this go.mod (part of the binaries' cache key) is unchanged; the kubectl that
// is built comes from the newest minor's module (../kube-apiserver-1.37).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
