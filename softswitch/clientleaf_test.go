package softswitch

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// startLeaf starts a software switch running the client leaf program
// with two read ports on loopback, its pipeline pushed.
func startLeaf(t *testing.T) *Switch {
	t.Helper()
	var last error
	for range 20 {
		sw, err := New(Config{Addr: netip.MustParseAddr("127.0.0.1"), BasePort: uint16(20000 + rand.IntN(30000)), ReadPorts: 2,
			Program: ClientLeafProgram, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			last = err
			continue
		}
		t.Cleanup(func() { sw.Close() })
		info, err := pipelines.ProgramP4Info(ClientLeafProgram)
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.SetPipeline(info, 1); err != nil {
			t.Fatal(err)
		}
		return sw
	}
	t.Fatalf("cannot start a software switch: %v", last)
	return nil
}

func readLoad(t *testing.T, s *Switch, member int64) uint64 {
	t.Helper()
	es, err := s.Read([]*p4v1.Entity{registerEntry(t, "member_load", member, nil)})
	if err != nil || len(es) != 1 {
		t.Fatalf("read member_load[%d]: %d cells, %v", member, len(es), err)
	}
	return pipelines.BytesUint(es[0].GetRegisterEntry().GetData().GetBitstring())
}

func writeAll(t *testing.T, s *Switch, typ p4v1.Update_Type, es ...*p4v1.Entity) {
	t.Helper()
	var us []*p4v1.Update
	for _, e := range es {
		us = append(us, &p4v1.Update{Type: typ, Entity: e})
	}
	for i, err := range s.Write(us) {
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
}

// spineRange is a spine_owner entry of [low, high] at priority.
func spineRange(t *testing.T, low, high uint64, priority int32, params ...[]byte) *p4v1.Entity {
	t.Helper()
	match := []*p4v1.FieldMatch{p4entity.Range(1, u64(low), u64(high))}
	return p4entity.Entry(objectID(t, "spine_owner"), priority, match, objectID(t, "spine"), params...)
}

// TestRangeMatches: range entries are checked as P4Runtime specifies,
// read back in canonical form, and matched by priority.
func TestRangeMatches(t *testing.T) {
	s := startLeaf(t)
	spine := func(id uint32) [][]byte { return [][]byte{u32(id), u32(0x7f000001), port16(7400)} }
	writeAll(t, s, p4v1.Update_INSERT,
		spineRange(t, 0, 99, 1, spine(1)...),
		spineRange(t, 50, 60, 2, spine(2)...), // inside the first, at a higher priority
	)
	tests := []struct {
		name string
		typ  p4v1.Update_Type
		e    *p4v1.Entity
		code codes.Code
		msg  string
	}{
		{"no priority", p4v1.Update_INSERT, spineRange(t, 1, 2, 0, spine(3)...), codes.InvalidArgument, "needs a positive priority"},
		{"low above high", p4v1.Update_INSERT, spineRange(t, 9, 2, 1, spine(3)...), codes.InvalidArgument, "above high"},
		{"whole field", p4v1.Update_INSERT, spineRange(t, 0, ^uint64(0), 1, spine(3)...), codes.InvalidArgument, "don't care"},
		{"same range and priority", p4v1.Update_INSERT, spineRange(t, 0, 99, 1, spine(3)...), codes.AlreadyExists, "already has"},
		{"exact match on a range field", p4v1.Update_INSERT, func() *p4v1.Entity {
			e := tableEntry(t, "spine_owner", "spine", [][]byte{u64(1)}, spine(3)...)
			e.GetTableEntry().Priority = 1
			return e
		}(), codes.InvalidArgument, "a range match expected"},
		{"priority on an exact table", p4v1.Update_INSERT, func() *p4v1.Entity {
			e := tableEntry(t, "shard_leaf", "leaf", [][]byte{u32(0)}, spine(3)...)
			e.GetTableEntry().Priority = 3
			return e
		}(), codes.InvalidArgument, "priority 3 on a table without"},
	}
	var us []*p4v1.Update
	for _, tt := range tests {
		us = append(us, &p4v1.Update{Type: tt.typ, Entity: tt.e})
	}
	for i, err := range s.Write(us) {
		st, _ := status.FromError(err)
		if st.Code() != tests[i].code || !strings.Contains(st.Message(), tests[i].msg) {
			t.Errorf("%s: %v, want %s with %q", tests[i].name, err, tests[i].code, tests[i].msg)
		}
	}
	// The same range at another priority is another entry.
	writeAll(t, s, p4v1.Update_INSERT, spineRange(t, 0, 99, 5, spine(5)...))
	writeAll(t, s, p4v1.Update_DELETE, spineRange(t, 0, 99, 5))

	got, err := s.Read([]*p4v1.Entity{spineRange(t, 50, 60, 2)})
	if err != nil || len(got) != 1 {
		t.Fatalf("read back: %v, %v", got, err)
	}
	r := got[0].GetTableEntry().Match[0].GetRange()
	if string(r.Low) != "\x32" || string(r.High) != "\x3c" || got[0].GetTableEntry().Priority != 2 {
		t.Errorf("read back %v: want canonical bounds 0x32…0x3c at priority 2", got[0].GetTableEntry())
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	owner := s.ctl.(*clientLeaf).spineOwner
	for _, c := range []struct {
		point uint64
		id    uint64 // 0: no entry
	}{{0, 1}, {49, 1}, {50, 2}, {60, 2}, {61, 1}, {99, 1}, {100, 0}} {
		e := owner.lookupRange(c.point)
		if (e == nil && c.id != 0) || (e != nil && e.params[0] != c.id) {
			t.Errorf("point %d: entry %v, want spine %d", c.point, e, c.id)
		}
	}
}

// fakeCacheSwitch stands in for a cache switch's read port of shard 0 (a
// fake: a UDP endpoint that answers every GET with a GET_REPLY carrying
// its member id and the load it is told to report).
type fakeCacheSwitch struct {
	ep   *transport.Endpoint
	node uint32

	mu   sync.Mutex
	load uint32
	from []netip.AddrPort // the sources of the GETs it received
}

func newFakeCacheSwitch(t *testing.T, node uint32) *fakeCacheSwitch {
	t.Helper()
	f := &fakeCacheSwitch{node: node}
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Retransmit: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	f.ep = ep
	ep.Start(func(out transport.Sender, src netip.AddrPort, req *wire.Message) {
		f.mu.Lock()
		f.from = append(f.from, src)
		load := f.load
		f.mu.Unlock()
		_ = out.Send(src, &wire.Message{Header: wire.Header{Op: wire.OpGetReply, Seq: req.Seq, Status: wire.StatusOK, Flags: wire.FlagTelemetry,
			NodeID: f.node, Load: load, ValueVersion: 1}, Key: req.Key, Value: []byte(fmt.Sprintf("from %d", f.node))})
	})
	return f
}

func (f *fakeCacheSwitch) setLoad(l uint32) { f.mu.Lock(); f.load = l; f.mu.Unlock() }

func (f *fakeCacheSwitch) sources() []netip.AddrPort {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]netip.AddrPort(nil), f.from...)
}

// TestClientLeafRelays: on UDP sockets the software client leaf relays a
// client's GET to the less loaded of the key's spine and storage leaf
// from its own read port, and the chosen switch's reply back to the
// client (under the client's sequence number, with the switch's
// telemetry), learning the switch's load from it.
func TestClientLeafRelays(t *testing.T) {
	s := startLeaf(t)
	spine, leaf := newFakeCacheSwitch(t, 11), newFakeCacheSwitch(t, 21)
	base := func(f *fakeCacheSwitch) []byte { return port16(f.ep.Addr().Port() - 1) } // its read port of shard 0 is base + 1
	readPort := netip.AddrPortFrom(s.Addr().Addr(), s.Addr().Port()+1)
	writeAll(t, s, p4v1.Update_INSERT,
		tableEntry(t, "client_read_port", "read_port", [][]byte{addr4(readPort.Addr()), port16(readPort.Port())}, u32(0)),
		spineRange(t, 0, 0x3fffffffffffffff, 1, u32(11), addr4(spine.ep.Addr().Addr()), base(spine)),
		tableEntry(t, "shard_leaf", "leaf", [][]byte{u32(0)}, u32(21), addr4(leaf.ep.Addr().Addr()), base(leaf)),
	)
	client, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Retransmit: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	client.Start(nil)
	get := func(seq uint64) wire.Message {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		r, err := client.Call(ctx, readPort, &wire.Message{Header: wire.Header{Op: wire.OpGet, Seq: seq}, Key: []byte(keyIn(0))})
		if err != nil {
			t.Fatalf("GET through the leaf: %v", err)
		}
		return r
	}

	spine.setLoad(5)
	if r := get(1); r.NodeID != 11 || r.Load != 5 || string(r.Value) != "from 11" {
		t.Fatalf("first read (equal loads): reply of member %d (load %d) %q, want spine 11's", r.NodeID, r.Load, r.Value)
	}
	if src := spine.sources(); len(src) != 1 || src[0] != readPort {
		t.Fatalf("the spine received GETs from %v, want one from the leaf's read port %s", src, readPort)
	}
	if got := readLoad(t, s, 11); got != 5 {
		t.Fatalf("member_load[11] = %d after the spine's reply, want 5", got)
	}
	leaf.setLoad(7)
	if r := get(2); r.NodeID != 21 || r.Load != 7 {
		t.Fatalf("second read: reply of member %d (load %d), want the storage leaf 21 (0 < 5)", r.NodeID, r.Load)
	}
	if r := get(3); r.NodeID != 11 {
		t.Fatalf("third read: reply of member %d, want the spine 11 (5 < 7)", r.NodeID)
	}
	if st := s.Stats(); st.Relayed.Load() != 3 || st.Replies.Load() != 3 {
		t.Errorf("relayed %d, replies %d; want 3 and 3", st.Relayed.Load(), st.Replies.Load())
	}
}

// TestProgramMismatch: a switch refuses the P4Info of the program it does
// not run.
func TestProgramMismatch(t *testing.T) {
	leafInfo, err := pipelines.ProgramP4Info(ClientLeafProgram)
	if err != nil {
		t.Fatal(err)
	}
	cacheInfo, err := pipelines.ProgramP4Info(Program)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    *Switch
		info *p4v1.ForwardingPipelineConfig
		want string
	}{
		{startSwitch(t), &p4v1.ForwardingPipelineConfig{P4Info: leafInfo}, "is not v1model/cache_switch.p4's"},
		{startLeaf(t), &p4v1.ForwardingPipelineConfig{P4Info: cacheInfo}, "is not v1model/client_leaf.p4's"},
	} {
		err := c.s.Verify(c.info.P4Info)
		if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), c.want) {
			t.Errorf("%s: %v, want %q", c.s.Program(), err, c.want)
		}
		if err := c.s.SetPipeline(c.info.P4Info, 9); err == nil {
			t.Errorf("%s installed the other program's P4Info", c.s.Program())
		}
	}
}
