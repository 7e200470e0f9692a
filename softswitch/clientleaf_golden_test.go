package softswitch

import (
	"fmt"
	"net/netip"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// The client leaf's golden vectors (stratum_pipelines/testdata/client_leaf.stf)
// run ClientLeafIngress on Ethernet frames and route every packet by the
// ipv4_route entries the file installs, as the program's Ipv4Forward does
// (port and MACs from the entry, TTL decremented, dropped without a
// route): what a client ToR does in the clients' path, which the software
// switch on UDP sockets relays instead (clientleaf.go). The leaf is
// 203.0.113.1 (read ports 7401 and 7402: shards 0 and 1); spine A
// (member 11) and spine B (member 12) are 203.0.113.11 and .12, the
// storage leaf of shard 0 (member 21) 203.0.113.21, all behind port 2;
// the clients behind port 1.
var (
	vSpineA = netip.MustParseAddr("203.0.113.11")
	vSpineB = netip.MustParseAddr("203.0.113.12")
	vLeaf   = netip.MustParseAddr("203.0.113.21")
)

const (
	vSpineBase = 7400
	vLeafBase  = 7500
	vRead1     = 7402 // the client leaf's read port of shard 1
)

// keyIn is the first key "k<i>" whose digest's two high bits are top:
// 0 falls in spine A's range, 1 in spine B's, 2 and 3 in no spine's.
func keyIn(top uint8) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("k%d", i)
		if d := hashing.DigestOfString(k); d[0]>>6 == top {
			return k
		}
	}
}

// vreply is a cache switch's GET_REPLY of key with its telemetry.
func vreply(seq uint64, key string, node, load uint32) []byte {
	m := &wire.Message{Header: wire.Header{Op: wire.OpGetReply, Flags: wire.FlagTelemetry, Seq: seq, NodeID: node, Load: load, ValueVersion: 1},
		Key: []byte(key), Value: []byte("v")}
	b, err := wire.Encode(m, wire.DefaultDatagram)
	if err != nil {
		panic(err)
	}
	return b
}

func clientLeafVectors() []vector {
	inA, inB, noSpine := keyIn(0), keyIn(1), keyIn(2)
	cmd := func(c string) vector { return vector{command: c} }
	note := func(c string) vector { return vector{comment: c} }
	get := func(readPort uint16, seq uint64, key string) vector {
		return fromClientTo(netip.AddrPortFrom(vSwitch, readPort), vmsg(wire.OpGet, seq, key, nil, 0, 0))
	}
	reply := func(from netip.AddrPort, seq uint64, key string, node, load uint32) vector {
		return vector{port: 2, frame: ethFrame(vMACs[2][0], vMACs[2][1], from, vClient, 64, vreply(seq, key, node, load))}
	}
	return []vector{
		note("the leaf's read ports of shards 0 and 1; the spine ring's arcs as ranges of key_digest[127:64] (the upper half is no spine's); shard 0's storage leaf; routes"),
		cmd(fmt.Sprintf("add client_read_port ipv4_dst:%s udp_dst_port:%d read_port(shard:0)", vSwitch, vRead)),
		cmd(fmt.Sprintf("add client_read_port ipv4_dst:%s udp_dst_port:%d read_port(shard:1)", vSwitch, vRead1)),
		cmd(fmt.Sprintf("add spine_owner 1 key_point:0x0->0x3fffffffffffffff spine(id:11, addr:%s, base_port:%d)", vSpineA, vSpineBase)),
		cmd(fmt.Sprintf("add spine_owner 1 key_point:0x4000000000000000->0x7fffffffffffffff spine(id:12, addr:%s, base_port:%d)", vSpineB, vSpineBase)),
		cmd(fmt.Sprintf("add shard_leaf shard:0 leaf(id:21, addr:%s, base_port:%d)", vLeaf, vLeafBase)),
		cmd(fmt.Sprintf("add ipv4_route ipv4_dst:%s route(port:1, src_mac:0x%012x, dst_mac:0x%012x)", netip.PrefixFrom(vClient.Addr(), 24).Masked(), vMACs[1][0], vMACs[1][1])),
		cmd(fmt.Sprintf("add ipv4_route ipv4_dst:%s route(port:2, src_mac:0x%012x, dst_mac:0x%012x)", netip.PrefixFrom(vSwitch, 24).Masked(), vMACs[2][0], vMACs[2][1])),
		cmd(fmt.Sprintf("add ipv4_route ipv4_dst:%s/32 drop()", vSwitch)),
		note("no load learned yet (both 0): a key of spine A's range on shard 0 goes to spine A's read port of shard 0"),
		get(vRead, 31, inA),
		note("spine A's reply passes back to the client; its telemetry sets member_load[11] to 5"),
		reply(netip.AddrPortFrom(vSpineA, vSpineBase+1), 31, inA, 11, 5),
		note("the storage leaf (load 0) is now the less loaded: the next read goes to its read port of shard 0"),
		get(vRead, 32, inA),
		note("the storage leaf's reply sets member_load[21] to 9"),
		reply(netip.AddrPortFrom(vLeaf, vLeafBase+1), 32, inA, 21, 9),
		note("spine A (5) is the less loaded again"),
		get(vRead, 33, inA),
		note("a key of spine B's range: spine B (0) against the storage leaf (9)"),
		get(vRead, 34, inB),
		note("spine only: shard 1 has no storage leaf"),
		get(vRead1, 35, inA),
		note("storage leaf only: no spine owns the key's point"),
		get(vRead, 36, noSpine),
		note("neither: forwarded unchanged to the leaf's own address, which the routes drop"),
		get(vRead1, 37, noSpine),
		note("a GET that is not to a read port of the leaf (to spine A's own read port) is forwarded unchanged by IPv4"),
		fromClientTo(netip.AddrPortFrom(vSpineA, vSpineBase+1), vmsg(wire.OpGet, 38, inA, nil, 0, 0)),
	}
}

func fromClientTo(dst netip.AddrPort, payload []byte) vector {
	return vector{port: 1, frame: ethFrame(vMACs[1][0], vMACs[1][1], vClient, dst, 64, payload)}
}

// runLeafFrame runs one frame through ClientLeafIngress and routes it by
// the switch's ipv4_route entries.
func runLeafFrame(t *testing.T, s *Switch, frame []byte) (ports []int, frames [][]byte) {
	t.Helper()
	p := ingress(t, s, frame)
	port, srcMAC, dstMAC, ok := route(t, s, p.dst.Addr())
	if !ok {
		return nil, nil
	}
	return []int{port}, [][]byte{ethFrame(dstMAC, srcMAC, p.src, p.dst, frame[14+8]-1, p.b)}
}

// route is the longest-prefix match of dst in the switch's ipv4_route
// table: the route action's port and MACs, or false for drop or no entry.
func route(t *testing.T, s *Switch, dst netip.Addr) (port int, srcMAC, dstMAC uint64, ok bool) {
	t.Helper()
	es, err := s.Read([]*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: objectID(t, "ipv4_route")}}}})
	if err != nil {
		t.Fatal(err)
	}
	best := -1
	var action *p4v1.Action
	for _, e := range es {
		te := e.GetTableEntry()
		lpm := te.Match[0].GetLpm()
		var a [4]byte
		copy(a[4-len(lpm.Value):], lpm.Value)
		if netip.PrefixFrom(netip.AddrFrom4(a), int(lpm.PrefixLen)).Contains(dst) && int(lpm.PrefixLen) > best {
			best, action = int(lpm.PrefixLen), te.GetAction().GetAction()
		}
	}
	if action == nil || action.ActionId != objectID(t, "route") {
		return 0, 0, 0, false
	}
	u := func(i int) uint64 { return pipelines.BytesUint(action.Params[i].Value) }
	return int(u(0)), u(1), u(2), true
}

// TestClientLeafGoldenVectors runs the client leaf's golden vectors and
// compares the rendered STF file with
// stratum_pipelines/testdata/client_leaf.stf (-update rewrites it), then
// checks the choices counter against the reads it saw.
func TestClientLeafGoldenVectors(t *testing.T) {
	s := startLeaf(t)
	checkGolden(t, s, "client_leaf.stf", "the client leaf program (v1model)", clientLeafVectors(), func(_ int, frame []byte) ([]int, [][]byte) {
		return runLeafFrame(t, s, frame)
	})
	es, err := s.Read([]*p4v1.Entity{{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: objectID(t, "choices")}}}})
	if err != nil || len(es) != 2 {
		t.Fatalf("read choices: %d cells, %v", len(es), err)
	}
	// To a spine: reads 31, 33, 34, 35; to the storage leaf: 32, 36.
	for i, want := range []int64{4, 2} {
		if got := es[i].GetCounterEntry().GetData().GetPacketCount(); got != want {
			t.Errorf("choices[%d] = %d, want %d", i, got, want)
		}
	}
	for member, want := range map[int64]uint64{11: 5, 21: 9, 12: 0} {
		if got := readLoad(t, s, member); got != want {
			t.Errorf("member_load[%d] = %d, want %d", member, got, want)
		}
	}
}
