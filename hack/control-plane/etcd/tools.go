//go:build tools

// Package tools pins etcd so `go mod tidy` keeps its dependencies; the binary is built
// with `go build go.etcd.io/etcd/server/v3` (the module root is etcd's main package).
package tools

import _ "go.etcd.io/etcd/server/v3"
