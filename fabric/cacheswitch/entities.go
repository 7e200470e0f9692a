package cacheswitch

import (
	"fmt"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// ids are the P4Runtime ids of the cache switch program's objects the
// controller uses, looked up by name in its P4Info.
type ids struct {
	switchAddress, identity, storageRoute, cacheLookup                uint32
	serveReads, serveCoherence, setIdentity, toShim, cached           uint32
	valid, version, fillSeq, leaseUntil, clock, hotThreshold, sketch0 uint32
	sketch1, sketch2, sketch3, bloom0, bloom1, bloom2, cacheHits      uint32
	hotKey                                                            uint32 // the hot_key_t digest
}

// lookupIDs resolves the objects by name; the P4Info must be the cache
// switch program's.
func lookupIDs(info *p4configv1.P4Info) (ids, error) {
	var id ids
	err := pipelines.ObjectIDs(info,
		pipelines.IDRef{Dst: &id.switchAddress, Name: "switch_address"}, pipelines.IDRef{Dst: &id.identity, Name: "identity"},
		pipelines.IDRef{Dst: &id.storageRoute, Name: "storage_route"}, pipelines.IDRef{Dst: &id.cacheLookup, Name: "cache_lookup"},
		pipelines.IDRef{Dst: &id.serveReads, Name: "serve_reads"}, pipelines.IDRef{Dst: &id.serveCoherence, Name: "serve_coherence"},
		pipelines.IDRef{Dst: &id.setIdentity, Name: "set_identity"}, pipelines.IDRef{Dst: &id.toShim, Name: "to_shim"},
		pipelines.IDRef{Dst: &id.cached, Name: "cached"}, pipelines.IDRef{Dst: &id.valid, Name: "valid"},
		pipelines.IDRef{Dst: &id.version, Name: "version"}, pipelines.IDRef{Dst: &id.fillSeq, Name: "fill_seq"},
		pipelines.IDRef{Dst: &id.leaseUntil, Name: "lease_until"}, pipelines.IDRef{Dst: &id.clock, Name: "clock"},
		pipelines.IDRef{Dst: &id.hotThreshold, Name: "hot_threshold"}, pipelines.IDRef{Dst: &id.sketch0, Name: "sketch_row0"},
		pipelines.IDRef{Dst: &id.sketch1, Name: "sketch_row1"}, pipelines.IDRef{Dst: &id.sketch2, Name: "sketch_row2"},
		pipelines.IDRef{Dst: &id.sketch3, Name: "sketch_row3"}, pipelines.IDRef{Dst: &id.bloom0, Name: "bloom0"},
		pipelines.IDRef{Dst: &id.bloom1, Name: "bloom1"}, pipelines.IDRef{Dst: &id.bloom2, Name: "bloom2"},
		pipelines.IDRef{Dst: &id.cacheHits, Name: "cache_hits"}, pipelines.IDRef{Dst: &id.hotKey, Name: "hot_key_t"})
	if err != nil {
		return id, fmt.Errorf("cannot program the switch: %w", err)
	}
	return id, nil
}
