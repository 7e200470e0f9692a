// Package topology turns a CacheCluster and its cache layers (API package
// api/v1alpha1) into the desired shape of the cluster: the
// partmap.Spec that partmap.Build turns into the partition map, the names of
// every storage shard and cache member, and the settings of the data-plane
// processes. The operator and standalone mode both start here, so the same
// YAML yields the same members, seeds and map in both (data flows spec →
// topology → partition map → data plane, and nothing is computed twice).
//
// Layers are ordered upper first, as in the spec. Each layer's ring seed is
// its hashSeed or, when unset, one derived from the cluster and layer names,
// so layers partition keys independently (DistCache §3.1). Switch-backed
// layers are described but not placed: their members come from a
// SwitchFabric's switches, which the fabric drivers program.
package topology
