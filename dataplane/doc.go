// Package dataplane holds DistCache's data plane: the wire protocol
// (package wire), the UDP transport every role shares (package transport)
// and the key ring that authenticates its writes (package wireauth),
// the partition map's addresses resolved once per version (package peers),
// the cache node (package cachenode), the storage shim in front of Redis with
// two-phase coherence (package shim) and the Prometheus metrics they expose
// (package metrics). The client library lives in the top-level client
// package. DESIGN.md parts 4 and 5 describe the roles; the DistCache paper
// (§4.2 routing, §4.3 coherence) the algorithms.
package dataplane
