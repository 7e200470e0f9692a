package softswitch

import (
	"strings"
	"testing"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// TestWriteErrors: each bad update is refused with P4Runtime's code and
// a message naming what is wrong, and leaves the others applied.
func TestWriteErrors(t *testing.T) {
	h := newHarness(t)
	digest := make([]byte, 16)
	digest[15] = 1
	lookup := func(params ...[]byte) *p4v1.Entity {
		return tableEntry(t, "cache_lookup", "cached", [][]byte{digest}, params...)
	}
	h.write(t, p4v1.Update_INSERT, lookup(u32(1)))
	tests := []struct {
		name string
		typ  p4v1.Update_Type
		e    *p4v1.Entity
		code codes.Code
		msg  string
	}{
		{"insert twice", p4v1.Update_INSERT, lookup(u32(2)), codes.AlreadyExists, "already has this entry"},
		{"modify missing", p4v1.Update_MODIFY, tableEntry(t, "cache_lookup", "cached", [][]byte{{9}}, u32(1)), codes.NotFound, "no such entry to modify"},
		{"delete missing", p4v1.Update_DELETE, tableEntry(t, "cache_lookup", "cached", [][]byte{{9}}), codes.NotFound, "no such entry"},
		{"parameter too wide", p4v1.Update_MODIFY, lookup(u64(1 << 40)), codes.InvalidArgument, "does not fit 32 bits"},
		{"parameter missing", p4v1.Update_MODIFY, lookup(), codes.InvalidArgument, "parameter slot missing"},
		{"default-only action", p4v1.Update_INSERT, tableEntry(t, "cache_lookup", "uncached", [][]byte{{8}}), codes.InvalidArgument, "default only"},
		{"action of another table", p4v1.Update_INSERT, tableEntry(t, "cache_lookup", "to_shim", [][]byte{{8}}, u32(1), u32(1)), codes.InvalidArgument, "cannot run action"},
		{"match too wide", p4v1.Update_INSERT, tableEntry(t, "storage_route", "to_shim", [][]byte{u64(1 << 33)}, u32(1), u32(1)), codes.InvalidArgument, "does not fit 32 bits"},
		{"match missing", p4v1.Update_INSERT, tableEntry(t, "switch_address", "serve_coherence", [][]byte{{1}}), codes.InvalidArgument, "exact match field udp_dst_port"},
		{"register index", p4v1.Update_MODIFY, registerEntry(t, "valid", 1<<20, u64(1)), codes.OutOfRange, "outside 0…65535"},
		{"register insert", p4v1.Update_INSERT, registerEntry(t, "valid", 1, u64(1)), codes.InvalidArgument, "only MODIFY"},
		{"register too wide", p4v1.Update_MODIFY, registerEntry(t, "valid", 1, u64(2)), codes.InvalidArgument, "does not fit 1 bits"},
		{"no such table", p4v1.Update_INSERT, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: 1}}}, codes.NotFound, "no table 1"},
	}
	var us []*p4v1.Update
	for _, tt := range tests {
		us = append(us, &p4v1.Update{Type: tt.typ, Entity: tt.e})
	}
	good := tableEntry(t, "cache_lookup", "cached", [][]byte{{7}}, u32(3))
	us = append(us, &p4v1.Update{Type: p4v1.Update_INSERT, Entity: good})
	errs := h.sw.Write(us)
	for i, tt := range tests {
		st, _ := status.FromError(errs[i])
		if st.Code() != tt.code || !strings.Contains(st.Message(), tt.msg) {
			t.Errorf("%s: %v, want %s with %q", tt.name, errs[i], tt.code, tt.msg)
		}
	}
	if errs[len(tests)] != nil {
		t.Errorf("the good update after the bad ones: %v", errs[len(tests)])
	}
	got, err := h.sw.Read([]*p4v1.Entity{tableEntry(t, "cache_lookup", "cached", [][]byte{{0, 7}})})
	if err != nil || len(got) != 1 || pipelines.BytesUint(got[0].GetTableEntry().GetAction().GetAction().Params[0].Value) != 3 {
		t.Errorf("read back %v, %v", got, err)
	}
}

// TestPipelineMismatch: a P4Info that is not the cache switch's is
// refused with a message that says how it differs, and the switch keeps
// running the pipeline it had.
func TestPipelineMismatch(t *testing.T) {
	h := newHarness(t)
	info, err := pipelines.ProgramP4Info(Program)
	if err != nil {
		t.Fatal(err)
	}
	other := proto.Clone(info).(*p4configv1.P4Info)
	other.Tables[0].Size = 7
	err = h.sw.SetPipeline(other, 2)
	if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "table switch_address (id 0x2000001) differs") {
		t.Errorf("error %v", err)
	}
	if _, cookie, ok := h.sw.Pipeline(); !ok || cookie != 1 {
		t.Errorf("pipeline cookie %d, %v after a refused one", cookie, ok)
	}
}
