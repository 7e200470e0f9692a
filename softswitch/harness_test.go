package softswitch

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// callTimeout bounds each call of a test; a lost datagram is retransmitted
// within it.
const callTimeout = 10 * time.Second

// harness is a software switch with the cache switch pipeline, a client
// endpoint, and shimPeer: a UDP endpoint standing in the storage shim's
// place, which answers reads and fetches from its own table with the wire
// encoder and sends the coherence messages a shim sends.
type harness struct {
	t      *testing.T
	sw     *Switch
	client *transport.Endpoint
	shim   *transport.Endpoint

	mu     sync.Mutex
	values map[string]shimValue // what the shim stands for: key to value
	seen   []wire.Message       // requests the shim received, copied
}

type shimValue struct {
	value   []byte
	version uint64
}

const testNode, testMapVersion = 7, 3

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, values: map[string]shimValue{}}
	h.sw = startSwitch(t)
	info, err := pipelines.ProgramP4Info(Program)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.sw.SetPipeline(info, 1); err != nil {
		t.Fatal(err)
	}
	for _, ep := range []**transport.Endpoint{&h.client, &h.shim} {
		e, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0", Retransmit: callTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		*ep = e
	}
	h.client.Start(nil)
	h.shim.Start(h.serveShim)
	base := h.sw.Addr()
	h.write(t, p4v1.Update_INSERT,
		tableEntry(t, "switch_address", "serve_coherence", [][]byte{addr4(base.Addr()), port16(base.Port())}),
		tableEntry(t, "switch_address", "serve_reads", [][]byte{addr4(base.Addr()), port16(base.Port() + 1)}, u32(0)),
		tableEntry(t, "storage_route", "to_shim", [][]byte{u32(0)}, addr4(h.shim.Addr().Addr()), port16(h.shim.Addr().Port())),
	)
	def := tableEntry(t, "identity", "set_identity", nil, u32(testNode), u64(testMapVersion))
	def.GetTableEntry().IsDefaultAction = true
	h.write(t, p4v1.Update_MODIFY, def)
	return h
}

// startSwitch starts a switch with two read ports on loopback, at a
// random base port (another one when it is taken).
func startSwitch(t testing.TB) *Switch {
	t.Helper()
	var last error
	for range 20 {
		base := uint16(20000 + rand.IntN(30000))
		sw, err := New(Config{Addr: netip.MustParseAddr("127.0.0.1"), BasePort: base, ReadPorts: 2, Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			t.Cleanup(func() { sw.Close() })
			return sw
		}
		last = err
	}
	t.Fatalf("cannot start a software switch: %v", last)
	return nil
}

func (h *harness) serveShim(out transport.Sender, src netip.AddrPort, req *wire.Message) {
	h.mu.Lock()
	h.seen = append(h.seen, wire.Message{Header: req.Header, Key: append([]byte(nil), req.Key...)})
	v, ok := h.values[string(req.Key)]
	h.mu.Unlock()
	reply := wire.Message{Header: wire.Header{Op: req.Op.Reply(), Seq: req.Seq, Status: wire.StatusOK}, Key: req.Key}
	if !ok {
		reply.Status = wire.StatusNotFound
	} else {
		reply.Value, reply.ValueVersion = v.value, v.version
	}
	_ = out.Send(src, &reply)
}

func (h *harness) setValue(key string, value []byte, version uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.values[key] = shimValue{value: value, version: version}
}

// requests are the requests the shim received.
func (h *harness) requests() []wire.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]wire.Message(nil), h.seen...)
}

func (h *harness) write(t *testing.T, typ p4v1.Update_Type, entities ...*p4v1.Entity) {
	t.Helper()
	var us []*p4v1.Update
	for _, e := range entities {
		us = append(us, &p4v1.Update{Type: typ, Entity: e})
	}
	for i, err := range h.sw.Write(us) {
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
}

// cacheKey gives key a lookup entry at slot, waiting for the fill of
// fetchSeq, and leases the switch to serve it.
func (h *harness) cacheKey(t *testing.T, key string, slot uint32, fetchSeq uint64) {
	t.Helper()
	d := hashing.DigestOfString(key)
	h.write(t, p4v1.Update_INSERT, tableEntry(t, "cache_lookup", "cached", [][]byte{d[:]}, u32(slot)))
	h.write(t, p4v1.Update_MODIFY, registerEntry(t, "fill_seq", int64(slot), u64(fetchSeq)))
}

func (h *harness) lease(t *testing.T, until uint64) {
	t.Helper()
	h.write(t, p4v1.Update_MODIFY, registerEntry(t, "lease_until", 0, u64(until)))
}

// get reads key through the switch's read port of shard 0.
func (h *harness) get(t *testing.T, key string, flags wire.Flag) wire.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	m := &wire.Message{Header: wire.Header{Op: wire.OpGet, Flags: flags}, Key: []byte(key)}
	r, err := h.client.Call(ctx, h.readPort(), m)
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return r
}

func (h *harness) readPort() netip.AddrPort {
	return netip.AddrPortFrom(h.sw.Addr().Addr(), h.sw.Addr().Port()+1)
}

// coherence sends a shim's coherence message to the switch.
func (h *harness) coherence(t *testing.T, op wire.Op, key string, value []byte, version uint64) wire.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	m := &wire.Message{Header: wire.Header{Op: op, ValueVersion: version}, Key: []byte(key), Value: value}
	r, err := h.shim.Call(ctx, h.sw.Addr(), m)
	if err != nil {
		t.Fatalf("%s %s: %v", op, key, err)
	}
	return r
}

// fetch sends the controller's FETCH of key as a packet-out, from the
// switch's coherence address to the shim, and waits for the FETCH_REPLY's
// packet-in.
func (h *harness) fetch(t *testing.T, key string, seq uint64) wire.Message {
	t.Helper()
	m := &wire.Message{Header: wire.Header{Op: wire.OpFetch, Seq: seq}, Key: []byte(key)}
	b, err := wire.Encode(m, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.sw.PacketOut(pipelines.AppendFrame(nil, h.sw.Addr(), h.shim.Addr(), b)); err != nil {
		t.Fatal(err)
	}
	select {
	case frame := <-h.sw.packetIns:
		_, _, payload, err := pipelines.ParseFrame(frame)
		if err != nil {
			t.Fatal(err)
		}
		r, err := wire.Decode(payload)
		if err != nil {
			t.Fatal(err)
		}
		return r
	case <-time.After(callTimeout):
		t.Fatalf("no packet-in for the FETCH of %s", key)
		return wire.Message{}
	}
}

func (h *harness) readRegister(t *testing.T, name string, i int64) uint64 {
	t.Helper()
	es, err := h.sw.Read([]*p4v1.Entity{registerEntry(t, name, i, nil)})
	if err != nil || len(es) != 1 {
		t.Fatalf("read %s[%d]: %d entities, %v", name, i, len(es), err)
	}
	return pipelines.BytesUint(es[0].GetRegisterEntry().GetData().GetBitstring())
}

// objectID is the id of the object name in the cache switch's P4Info, or
// else in the client leaf's (they share the objects of forward.p4).
func objectID(t testing.TB, name string) uint32 {
	t.Helper()
	for _, program := range []string{Program, ClientLeafProgram} {
		info, err := pipelines.ProgramP4Info(program)
		if err != nil {
			t.Fatal(err)
		}
		if id, ok := pipelines.ObjectID(info, name); ok {
			return id
		}
	}
	t.Fatalf("no P4Info has %s", name)
	return 0
}

// tableEntry is an entry of table with exact matches (field ids 1, 2, …)
// running action with params (ids 1, 2, …).
func tableEntry(t testing.TB, table, action string, matches [][]byte, params ...[]byte) *p4v1.Entity {
	t.Helper()
	return p4entity.TableEntry(objectID(t, table), objectID(t, action), matches, params...)
}

// registerEntry is cell i of register name (every cell when i < 0) with
// value v (none for a read).
func registerEntry(t testing.TB, name string, i int64, v []byte) *p4v1.Entity {
	t.Helper()
	return p4entity.Register(objectID(t, name), i, v)
}

func addr4(a netip.Addr) []byte { b := a.As4(); return b[:] }
func port16(p uint16) []byte    { return p4entity.U16(p) }
func u32(v uint32) []byte       { return p4entity.U32(v) }
func u64(v uint64) []byte       { return p4entity.U64(v) }

func digestOf(key []byte) []byte { d := hashing.DigestOf(key); return d[:] }
