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
	for _, f := range []struct {
		dst  *uint32
		name string
	}{
		{&id.switchAddress, "switch_address"}, {&id.identity, "identity"},
		{&id.storageRoute, "storage_route"}, {&id.cacheLookup, "cache_lookup"},
		{&id.serveReads, "serve_reads"}, {&id.serveCoherence, "serve_coherence"},
		{&id.setIdentity, "set_identity"}, {&id.toShim, "to_shim"}, {&id.cached, "cached"},
		{&id.valid, "valid"}, {&id.version, "version"}, {&id.fillSeq, "fill_seq"},
		{&id.leaseUntil, "lease_until"}, {&id.clock, "clock"}, {&id.hotThreshold, "hot_threshold"},
		{&id.sketch0, "sketch_row0"}, {&id.sketch1, "sketch_row1"}, {&id.sketch2, "sketch_row2"},
		{&id.sketch3, "sketch_row3"}, {&id.bloom0, "bloom0"}, {&id.bloom1, "bloom1"},
		{&id.bloom2, "bloom2"}, {&id.cacheHits, "cache_hits"}, {&id.hotKey, "hot_key_t"},
	} {
		v, ok := pipelines.ObjectID(info, f.name)
		if !ok {
			return id, fmt.Errorf("cannot program the switch: its P4Info has no %s", f.name)
		}
		*f.dst = v
	}
	return id, nil
}
