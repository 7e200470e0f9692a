package cacheswitch

import (
	"encoding/binary"
	"fmt"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

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

func update(typ p4v1.Update_Type, e *p4v1.Entity) *p4v1.Update {
	return &p4v1.Update{Type: typ, Entity: e}
}

func exact(id uint32, v []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

// tableEntry is an entry of table with exact matches (field ids in order)
// running action with params (ids in order); no action for a delete.
func tableEntry(table, action uint32, matches [][]byte, params ...[]byte) *p4v1.Entity {
	te := &p4v1.TableEntry{TableId: table}
	for i, m := range matches {
		te.Match = append(te.Match, exact(uint32(i+1), m))
	}
	if action != 0 {
		a := &p4v1.Action{ActionId: action}
		for i, p := range params {
			a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: p})
		}
		te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

// register is cell i of a register (every cell when i < 0), with value v
// (nil for a read).
func register(id uint32, i int64, v []byte) *p4v1.Entity {
	re := &p4v1.RegisterEntry{RegisterId: id}
	if i >= 0 {
		re.Index = &p4v1.Index{Index: i}
	}
	if v != nil {
		re.Data = &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: v}}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: re}}
}

func counterCell(id uint32, i int64) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id, Index: &p4v1.Index{Index: i}}}}
}

func u16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
