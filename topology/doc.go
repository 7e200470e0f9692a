// Package topology is the core's picture of a cache cluster, in plain Go:
// its storage racks and shards, and its cache layers upper first, each
// with its member count, virtual nodes and ring seed. From it comes the
// partmap.Spec that partmap.Build turns into the partition map, and the
// names of every shard and member.
//
// It imports no API type, no runtime and no Kubernetes module. Package
// layout fills a Shape from a CacheCluster's spec; the operator and
// standalone mode both go through it, so the same YAML yields the same
// members, seeds and map in both (data flows spec → topology → partition
// map → data plane, and nothing is computed twice).
//
// Each layer's ring seed is its own or, when zero, one derived from the
// cluster and layer names, so layers partition keys independently
// (DistCache §3.1). A switch-backed layer's members are its switches, at
// the data addresses its fabric gives them; one whose switches are not
// known yet is left out of the map.
package topology
