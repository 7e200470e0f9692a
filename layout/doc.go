// Package layout is the one way from the API to a cluster's topology. It
// turns a CacheCluster, its cache layers and the SwitchFabrics of its
// switch-backed layers (API package api/v1alpha1) into the cluster's
// shape (package topology, from which the partition map is built), and
// the spec's settings into what the runtimes start: the command lines of
// cache nodes, shims and Redis, the failover policy, and the copies and
// cache-budget control loops' policies.
//
// Resolve is used by the distcache commands, standalone mode and the
// operator, so the same YAML yields the same members, seeds and map in
// both runtimes (data flows spec → topology → partition map → data plane,
// and nothing is computed twice).
//
// Layers are ordered upper first, as in the spec. Each layer's ring seed is
// its hashSeed or, when unset, one derived from the cluster and layer names,
// so layers partition keys independently (DistCache §3.1). Switch-backed
// layers take their members from a SwitchFabric's switches, which the
// fabric drivers program.
package layout
