// Package lease keeps the serving leases that storage shims grant cache
// nodes, so that fencing a dead or paused node needs no control plane.
//
// A node may serve a cached key only while it holds a lease from the
// key's shim. It asks with a renewal that carries the time it sent it on
// its own clock; the shim's grant extends the node's lease to that time
// plus the lease length. The shim records, per node, the latest end it
// may have granted, on its own clock, with a margin for the clocks'
// rates: the time it sends the grant plus the length plus the margin.
//
// A write whose INVALIDATE a node does not acknowledge waits until that
// recorded end, then proceeds without the node: it releases it. In the
// same step the shim moves the node to a new epoch. Grants, UPDATEs and
// FILLs carry the node's epoch at the shim. A node that receives a grant
// of a new epoch drops every entry of that shim before it takes the
// lease, and applies an UPDATE or a FILL only in the epoch it was sent
// in (or before its first grant, whose flush drops what they filled). So
// an entry that missed a write is never served again: the node's lease
// ran out before the write proceeded, and every lease after it comes with
// a flush.
//
// In a rolling upgrade a node serves a shim's keys under that shim's
// lease from the moment it sends its first renewal to it, and the shim
// releases a node by lease only once it received a renewal from it.
//
// Holder is the node's side, Grantor the shim's. testdata/lease.pml is
// the protocol's model for the SPIN model checker, with one variant per
// rule left out (model_test.go); docs/dataplane.md (Leases) has the
// argument. A shim grants leases on RENEW and releases by lease the
// owners that renewed (package shim, leases.go); a cache node with
// Config.ShimLeases renews them and serves under them (package
// cachenode, shimlease.go).
package lease
