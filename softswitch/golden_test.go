package softswitch

import (
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/hashing"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden packet vectors")

// The golden vectors run the cache switch program on Ethernet frames, as
// p4c's STF runner drives bmv2: the software switch's pipeline, with the
// program's forwarding around it (a reply leaves by its ingress port with
// the MACs swapped and TTL 64; a relayed packet is routed by ipv4_route,
// which sets the port and MACs and decrements the TTL; a FETCH_REPLY goes
// to the CPU port behind a packet_in header). They are rendered in STF
// syntax into stratum_pipelines/testdata/cache_switch.stf, with the
// register writes as `register_write NAME INDEX VALUE` (bmv2's
// runtime_CLI command), so that the same file drives bmv2 on a
// workstation. Addresses are TEST-NET ones: clients 192.0.2.0/24, shims
// 198.51.100.0/24, the switch 203.0.113.1.
var (
	vSwitch = netip.MustParseAddr("203.0.113.1")
	vClient = netip.AddrPortFrom(netip.MustParseAddr("192.0.2.10"), 40000)
	vShim   = netip.AddrPortFrom(netip.MustParseAddr("198.51.100.20"), 7000)
	vMACs   = map[int][2]uint64{1: {0x02_00_00_00_00_01, 0x02_00_00_00_00_a1}, 2: {0x02_00_00_00_00_02, 0x02_00_00_00_00_b2}}
)

const (
	vCoherence = 7400
	vRead      = 7401 // shard 0
	cpuPort    = 255
)

// vector is one step of the golden file: a control command, or a packet
// in on a port.
type vector struct {
	comment string
	command string // STF: setdefault, add, register_write
	port    int
	frame   []byte
}

func vmsg(op wire.Op, seq uint64, key string, value []byte, version uint64, status wire.Status) []byte {
	m := &wire.Message{Header: wire.Header{Op: op, Seq: seq, ValueVersion: version, Status: status}, Key: []byte(key), Value: value}
	b, err := wire.Encode(m, wire.DefaultDatagram)
	if err != nil {
		panic(err)
	}
	return b
}

// ethFrame is an Ethernet, IPv4 and UDP frame with MACs dst, src.
func ethFrame(dstMAC, srcMAC uint64, src, dst netip.AddrPort, ttl byte, payload []byte) []byte {
	f := pipelines.AppendFrame(nil, src, dst, payload)
	putMAC(f[0:], dstMAC)
	putMAC(f[6:], srcMAC)
	f[14+8] = ttl
	binary.BigEndian.PutUint16(f[14+10:], 0)
	binary.BigEndian.PutUint16(f[14+10:], pipelines.IPv4Checksum(f[14:34]))
	return f
}

func putMAC(b []byte, mac uint64) {
	var m [8]byte
	binary.BigEndian.PutUint64(m[:], mac)
	copy(b[:6], m[2:])
}

func fromClient(payload []byte) vector {
	return vector{port: 1, frame: ethFrame(vMACs[1][0], vMACs[1][1], vClient, netip.AddrPortFrom(vSwitch, vRead), 64, payload)}
}

func fromShim(dstPort uint16, payload []byte) vector {
	return vector{port: 2, frame: ethFrame(vMACs[2][0], vMACs[2][1], vShim, netip.AddrPortFrom(vSwitch, dstPort), 64, payload)}
}

func goldenVectors() []vector {
	hot := hashing.DigestOfString("hot")
	value := []byte("a value of 21 bytes..")
	cmd := func(c string) vector { return vector{command: c} }
	note := func(c string) vector { return vector{comment: c} }
	return []vector{
		note("the switch: its coherence and read ports, the shim's route, its identity"),
		cmd(fmt.Sprintf("add switch_address ipv4_dst:%s udp_dst_port:%d serve_coherence()", vSwitch, vCoherence)),
		cmd(fmt.Sprintf("add switch_address ipv4_dst:%s udp_dst_port:%d serve_reads(shard:0)", vSwitch, vRead)),
		cmd(fmt.Sprintf("add storage_route shard:0 to_shim(addr:%s, port:%d)", vShim.Addr(), vShim.Port())),
		cmd(fmt.Sprintf("add ipv4_route ipv4_dst:%s/24 route(port:1, src_mac:0x%012x, dst_mac:0x%012x)", vClient.Addr(), vMACs[1][0], vMACs[1][1])),
		cmd(fmt.Sprintf("add ipv4_route ipv4_dst:%s/24 route(port:2, src_mac:0x%012x, dst_mac:0x%012x)", vShim.Addr(), vMACs[2][0], vMACs[2][1])),
		cmd("setdefault identity set_identity(node_id:7, map_version:3)"),
		note("a miss is relayed to the shim under the switch's sequence number, and the reply back"),
		fromClient(vmsg(wire.OpGet, 11, "hot", nil, 0, 0)),
		fromShim(vRead, vmsg(wire.OpGetReply, 1<<16|uint64(relaySlot(vClient, 11)), "hot", value, 5, wire.StatusOK)),
		note("the controller inserts the key and fetches it; the FETCH_REPLY fills the slot and goes to the CPU"),
		cmd(fmt.Sprintf("add cache_lookup key_digest:0x%x cached(slot:5)", hot[:])),
		cmd("register_write fill_seq 5 4242"),
		cmd("register_write lease_until 0 0xffffffffffff"),
		fromShim(vCoherence, vmsg(wire.OpFetchReply, 4242, "hot", value, 5, wire.StatusOK)),
		note("a hit: the switch answers with the value, its version and telemetry"),
		fromClient(vmsg(wire.OpGet, 12, "hot", nil, 0, 0)),
		note("INVALIDATE clears the copy (FLAG_HIT: the key had one); the next read is relayed"),
		fromShim(vCoherence, vmsg(wire.OpInvalidate, 21, "hot", nil, 6, 0)),
		fromClient(vmsg(wire.OpGet, 13, "hot", nil, 0, 0)),
		note("UPDATE of the write refills it, acknowledged without the value; the next read hits"),
		fromShim(vCoherence, vmsg(wire.OpUpdate, 22, "hot", []byte("new"), 6, wire.StatusOK)),
		fromClient(vmsg(wire.OpGet, 14, "hot", nil, 0, 0)),
		note("a PING on the coherence port is answered"),
		fromShim(vCoherence, vmsg(wire.OpPing, 23, "ping", nil, 0, 0)),
	}
}

// goldenEntity turns an STF command into the P4Runtime update it stands
// for.
func goldenEntity(t *testing.T, c string) *p4v1.Update {
	t.Helper()
	f := strings.Fields(c)
	switch f[0] {
	case "register_write":
		idx, err := strconv.ParseInt(f[2], 0, 64)
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseUint(f[3], 0, 64)
		if err != nil {
			t.Fatal(err)
		}
		return &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: registerEntry(t, f[1], idx, u64(v))}
	case "setdefault":
		e := stfAction(t, f[1], strings.Join(f[2:], " "), nil)
		e.GetTableEntry().IsDefaultAction = true
		return &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: e}
	default: // add TABLE [PRIORITY] field:value ... action(params)
		first, priority := 2, 0
		if n, err := strconv.Atoi(f[2]); err == nil {
			first, priority = 3, n
		}
		i := first
		for i < len(f) && !strings.Contains(f[i], "(") {
			i++
		}
		e := stfAction(t, f[1], strings.Join(f[i:], " "), f[first:i])
		e.GetTableEntry().Priority = int32(priority)
		return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: e}
	}
}

// stfAction builds table's entry with the STF matches and action call.
func stfAction(t *testing.T, table, call string, matches []string) *p4v1.Entity {
	t.Helper()
	name, args, _ := strings.Cut(strings.TrimSuffix(call, ")"), "(")
	var params [][]byte
	for _, a := range strings.Split(args, ",") {
		if _, v, ok := strings.Cut(strings.TrimSpace(a), ":"); ok {
			params = append(params, stfValue(t, v))
		}
	}
	e := tableEntry(t, table, name, nil, params...)
	te := e.GetTableEntry()
	for i, m := range matches {
		_, v, _ := strings.Cut(m, ":")
		if low, high, ok := strings.Cut(v, "->"); ok { // a range, in bmv2's CLI syntax
			te.Match = append(te.Match, p4entity.Range(uint32(i+1), stfValue(t, low), stfValue(t, high)))
			continue
		}
		if value, plen, ok := strings.Cut(v, "/"); ok {
			n, err := strconv.Atoi(plen)
			if err != nil {
				t.Fatal(err)
			}
			te.Match = append(te.Match, &p4v1.FieldMatch{FieldId: uint32(i + 1), FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: stfValue(t, value), PrefixLen: int32(n)}}})
			continue
		}
		te.Match = append(te.Match, p4entity.Exact(uint32(i+1), stfValue(t, v)))
	}
	return e
}

func stfValue(t *testing.T, v string) []byte {
	t.Helper()
	if a, err := netip.ParseAddr(v); err == nil {
		return a.AsSlice()
	}
	if h, ok := strings.CutPrefix(v, "0x"); ok {
		if len(h)%2 == 1 {
			h = "0" + h
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("STF value %q: %v", v, err)
	}
	return u64(n)
}

// goldenTime is the ingress timestamp (µs) of every golden packet: they
// all fall in one load window, so the loads their replies carry do not
// depend on how fast the test runs.
const goldenTime = 1

// ingress parses frame's datagram and applies the switch's program to it
// at goldenTime.
func ingress(t *testing.T, s *Switch, frame []byte) packet {
	t.Helper()
	src, dst, payload, err := pipelines.ParseFrame(frame)
	if err != nil {
		t.Fatal(err)
	}
	p := packet{src: src, dst: dst, b: append(make([]byte, 0, maxDatagram), payload...)}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.parse()
	if p.dc {
		s.ctl.apply(&p, goldenTime, func(HotKey) {})
	}
	return p
}

// runFrame runs one frame in on port through the pipeline and the
// program's forwarding, and returns the frames out with their ports.
func runFrame(t *testing.T, s *Switch, port int, frame []byte) (ports []int, frames [][]byte) {
	t.Helper()
	p := ingress(t, s, frame)
	switch {
	case !p.dc || p.drop || p.role == roleNone:
		return nil, nil
	case p.toCPU:
		in := []byte{byte(port >> 1), byte(port << 7)} // packet_in: ingress_port (9 bits), pad (7)
		return []int{cpuPort}, [][]byte{append(in, frame...)}
	case p.reply:
		mac := vMACs[port]
		return []int{port}, [][]byte{ethFrame(mac[1], mac[0], p.src, p.dst, 64, p.b)}
	}
	out := 2
	if netip.MustParsePrefix(vClient.Addr().String() + "/24").Contains(p.dst.Addr()) {
		out = 1
	}
	mac := vMACs[out]
	return []int{out}, [][]byte{ethFrame(mac[1], mac[0], p.src, p.dst, frame[14+8]-1, p.b)}
}

// TestGoldenVectors runs the golden packet vectors through the software
// switch and compares the rendered STF file with
// stratum_pipelines/testdata/cache_switch.stf (-update rewrites it).
func TestGoldenVectors(t *testing.T) {
	s := startSwitch(t)
	info, err := pipelines.ProgramP4Info(Program)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetPipeline(info, 1); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, s, "cache_switch.stf", "the cache switch program (v1model)", goldenVectors(), func(port int, frame []byte) ([]int, [][]byte) {
		return runFrame(t, s, port, frame)
	})
}

// checkGolden runs vectors through s (packets through run), renders them
// in STF syntax and compares the result with file in
// stratum_pipelines/testdata; -update rewrites the file.
func checkGolden(t *testing.T, s *Switch, file, program string, vectors []vector, run func(port int, frame []byte) ([]int, [][]byte)) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# Golden packet vectors of %s, in the syntax of\n", program)
	b.WriteString("# p4c's STF tests: control commands, then each packet in and the packets it\n")
	b.WriteString("# sends out. Generated by softswitch's TestGoldenVectors from the software\n")
	b.WriteString("# switch (go test ./softswitch -run Golden -update); bmv2 runs the same file.\n")
	for _, v := range vectors {
		switch {
		case v.comment != "":
			fmt.Fprintf(&b, "\n# %s\n", v.comment)
		case v.command != "":
			if errs := s.Write([]*p4v1.Update{goldenEntity(t, v.command)}); errs[0] != nil {
				t.Fatalf("%s: %v", v.command, errs[0])
			}
			fmt.Fprintf(&b, "%s\n", v.command)
		default:
			fmt.Fprintf(&b, "packet %d %x\n", v.port, v.frame)
			ports, frames := run(v.port, v.frame)
			for i := range ports {
				fmt.Fprintf(&b, "expect %d %x\n", ports[i], frames[i])
			}
		}
	}
	golden := filepath.Join("..", "stratum_pipelines", "testdata", file)
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatalf("the switch's output differs from %s (go test -update rewrites it after a deliberate change):\n%s", golden, b.String())
	}
}
