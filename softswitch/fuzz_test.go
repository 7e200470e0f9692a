package softswitch

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"net"
	"net/netip"
	"slices"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"golang.org/x/net/ipv4"
	"google.golang.org/protobuf/proto"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// fuzzShim is where the fuzzed switch's storage route points; nothing
// listens there (the fuzz targets run the pipeline, not the egress).
var fuzzShim = netip.MustParseAddrPort("127.0.0.1:9")

// fuzzSwitch is a cache switch with the entries a controller writes first
// (its addresses, a storage route, its identity), a cached key and a
// lease, so that fuzzed packets reach every control.
func fuzzSwitch(f *testing.F) *Switch {
	s := startSwitch(f)
	info, err := pipelines.ProgramP4Info(Program)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.SetPipeline(info, 1); err != nil {
		f.Fatal(err)
	}
	base := s.Addr()
	d := hashing.DigestOfString("hot")
	def := tableEntry(f, "identity", "set_identity", nil, u32(testNode), u64(testMapVersion))
	def.GetTableEntry().IsDefaultAction = true
	for _, u := range fuzzSetup(f, base, def, d) {
		if errs := s.Write([]*p4v1.Update{u}); errs[0] != nil {
			f.Fatalf("%v: %v", u, errs[0])
		}
	}
	return s
}

func fuzzSetup(f *testing.F, base netip.AddrPort, identity *p4v1.Entity, d hashing.Digest) []*p4v1.Update {
	up := func(typ p4v1.Update_Type, e *p4v1.Entity) *p4v1.Update { return &p4v1.Update{Type: typ, Entity: e} }
	return []*p4v1.Update{
		up(p4v1.Update_INSERT, tableEntry(f, "switch_address", "serve_coherence", [][]byte{addr4(base.Addr()), port16(base.Port())})),
		up(p4v1.Update_INSERT, tableEntry(f, "switch_address", "serve_reads", [][]byte{addr4(base.Addr()), port16(base.Port() + 1)}, u32(0))),
		up(p4v1.Update_INSERT, tableEntry(f, "storage_route", "to_shim", [][]byte{u32(0)}, addr4(fuzzShim.Addr()), port16(fuzzShim.Port()))),
		up(p4v1.Update_MODIFY, identity),
		up(p4v1.Update_INSERT, tableEntry(f, "cache_lookup", "cached", [][]byte{d[:]}, u32(3))),
		up(p4v1.Update_MODIFY, registerEntry(f, "lease_until", 0, u64(1<<47))),
	}
}

// FuzzWrite applies arbitrary P4Runtime WriteRequests, as the P4Runtime
// server decodes them, one update at a time: an update the switch refuses
// leaves every table, and the register or counter it names, as it was.
func FuzzWrite(f *testing.F) {
	s := fuzzSwitch(f)
	base := s.Addr()
	d := hashing.DigestOfString("other")
	def := tableEntry(f, "identity", "set_identity", nil, u32(9), u64(12))
	def.GetTableEntry().IsDefaultAction = true
	valid := fuzzSetup(f, base, def, d)
	valid = append(valid,
		&p4v1.Update{Type: p4v1.Update_DELETE, Entity: tableEntry(f, "cache_lookup", "cached", [][]byte{d[:]}, u32(3))},
		&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: registerEntry(f, "fill_seq", 3, u64(77))},
		&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: registerEntry(f, "fill_seq", -1, u64(0))},
	)
	for _, u := range valid {
		b, err := proto.Marshal(&p4v1.WriteRequest{DeviceId: 1, Updates: []*p4v1.Update{u}})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var req p4v1.WriteRequest
		if proto.Unmarshal(raw, &req) != nil {
			return // gRPC refuses it before the server sees it
		}
		for _, u := range req.Updates {
			before := switchState(t, s, u.GetEntity())
			if errs := s.Write([]*p4v1.Update{u}); errs[0] != nil {
				if after := switchState(t, s, u.GetEntity()); after != before {
					t.Fatalf("refused update %v (%v) changed the switch", u, errs[0])
				}
			}
		}
	})
}

// switchState hashes every table entry of s, and the cells of the
// register or counter e names.
func switchState(t *testing.T, s *Switch, e *p4v1.Entity) uint64 {
	t.Helper()
	entities, err := s.Read([]*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var encoded [][]byte
	for _, e := range entities {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		encoded = append(encoded, b)
	}
	slices.SortFunc(encoded, bytes.Compare)
	h := fnv.New64a()
	for _, b := range encoded {
		_, _ = h.Write(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var word [8]byte
	put := func(vs []uint64) {
		for _, v := range vs {
			binary.LittleEndian.PutUint64(word[:], v)
			_, _ = h.Write(word[:])
		}
	}
	if r, ok := s.st.registers[e.GetRegisterEntry().GetRegisterId()]; ok {
		put(r.cells)
	}
	if c, ok := s.st.counters[e.GetCounterEntry().GetCounterId()]; ok {
		put(c.packets)
		put(c.bytes)
	}
	return h.Sum64()
}

// FuzzProcess runs arbitrary UDP payloads, from a client or from the
// storage shim, through the cache switch's pipeline. A payload that is
// not DistCache's is dropped and counted; whatever the pipeline lets
// through is still a DistCache header of at most a datagram.
func FuzzProcess(f *testing.F) {
	s := fuzzSwitch(f)
	msgs := []wire.Message{
		{Header: wire.Header{Op: wire.OpGet, Seq: 1}, Key: []byte("hot")},
		{Header: wire.Header{Op: wire.OpGet, Seq: 2, Flags: wire.FlagCacheOnly}, Key: []byte("cold")},
		{Header: wire.Header{Op: wire.OpGetReply, Seq: 1, Status: wire.StatusOK}, Key: []byte("hot"), Value: []byte("v1")},
		{Header: wire.Header{Op: wire.OpInvalidate, Seq: 3, ValueVersion: 5}, Key: []byte("hot")},
		{Header: wire.Header{Op: wire.OpUpdate, Seq: 4, ValueVersion: 6}, Key: []byte("hot"), Value: []byte("v2")},
		{Header: wire.Header{Op: wire.OpFetchReply, Seq: 5, ValueVersion: 6, Status: wire.StatusOK}, Key: []byte("hot"), Value: []byte("v2")},
		{Header: wire.Header{Op: wire.OpPing, Seq: 6}, Key: []byte("p")},
	}
	for i, m := range msgs {
		b, err := wire.Encode(&m, wire.DefaultDatagram)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, i%2 == 0)
		f.Add(b[:len(b)-1], false)
	}
	f.Add([]byte("GET hot\r\n"), false)
	f.Fuzz(func(t *testing.T, payload []byte, fromShim bool) {
		src, port := netip.MustParseAddrPort("127.0.0.1:40000"), 1
		if fromShim {
			src, port = fuzzShim, 0
		}
		local := netip.AddrPortFrom(s.cfg.Addr, s.cfg.BasePort+uint16(port))
		buf := append(make([]byte, 0, maxDatagram), payload...)
		in := []ipv4.Message{{Buffers: [][]byte{buf}, N: len(buf), Addr: net.UDPAddrFromAddrPort(src)}}
		pkts := make([]packet, 1)
		unparsed := s.stats.Unparsed.Load()
		s.process(local, in, pkts)
		p := &pkts[0]
		isDC := len(payload) >= wire.HeaderLen && binary.BigEndian.Uint16(payload) == wire.Magic && payload[2] == wire.ProtocolVersion &&
			len(payload) >= wire.HeaderLen+int(binary.BigEndian.Uint16(payload[offKeyLen:]))
		if !isDC {
			if !p.drop || s.stats.Unparsed.Load() != unparsed+1 {
				t.Fatalf("payload %q not DistCache's: drop %v, unparsed %d → %d", payload, p.drop, unparsed, s.stats.Unparsed.Load())
			}
			return
		}
		if p.drop {
			return
		}
		if len(p.b) < wire.HeaderLen || len(p.b) > maxDatagram || binary.BigEndian.Uint16(p.b) != wire.Magic {
			t.Fatalf("payload %q: the pipeline lets through %d bytes %q", payload, len(p.b), p.b)
		}
	})
}
