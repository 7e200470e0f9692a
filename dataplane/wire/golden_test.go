package wire_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/dataplane/wireauth"
	"github.com/distcache/distcache/placement/hashing"
)

// goldenKey signs the authenticated golden vectors (FlagAuth): its tags
// pin the MAC (HMAC-SHA256 truncated to wire.TagLen bytes) as well.
var goldenKey = []byte("distcache-golden-vector-key-0001")

func goldenKeyring(t testing.TB) *wireauth.Keyring {
	t.Helper()
	k, err := wireauth.New(goldenKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// appendLike encodes the datagram of m from off as a golden datagram with
// m's flags was encoded: signed with goldenKey when m carries FlagAuth.
func appendLike(t testing.TB, m *wire.Message, off, size int) ([]byte, int, error) {
	if m.Has(wire.FlagAuth) {
		return wire.AppendSignedDatagram(nil, m, off, size, goldenKeyring(t))
	}
	return wire.AppendDatagram(nil, m, off, size)
}

var update = flag.Bool("update", false, "rewrite golden files")

const goldenDir = "testdata/golden"

// golden is one golden packet vector: a datagram of fixed inputs.
type golden struct {
	name    string // file name without ".hex"
	comment string // what the vector is
	data    []byte
}

// more is the MORE for message seq of key "key:42".
func more(seq uint64, valueLen, from uint32) *wire.Message {
	m := wire.NewMore(seq, []byte("key:42"), valueLen, from)
	return &m
}

// goldenVectors encodes the golden messages. Changing an input changes the
// files: run go test -update and review the diff.
func goldenVectors(t testing.TB) []golden {
	t.Helper()
	const version = 0x0102030405060708
	type vec struct {
		name, comment string
		m             *wire.Message
	}
	vecs := []vec{
		{"get", `GET key "key:42" seq 1`,
			msg(withOp(wire.OpGet), withSeq(1))},
		{"get_reply_hit", `GET_REPLY key "key:42" seq 1, value "hello", FlagHit|FlagTelemetry, node 7 load 1234, version 99, map version 3`,
			msg(withOp(wire.OpGetReply), withSeq(1), withValue([]byte("hello")), withFlags(wire.FlagHit), withTelemetry(7, 1234), withVersion(99), withMapVersion(3))},
		{"get_cache_only", `GET key "key:42" seq 5, FlagCacheOnly (a client's hedged read: a cache node's copy or nothing), map version 3`,
			msg(withOp(wire.OpGet), withSeq(5), withFlags(wire.FlagCacheOnly), withMapVersion(3))},
		{"get_reply_miss_not_found", `GET_REPLY key "key:42" seq 1, status not_found, map version 3`,
			msg(withOp(wire.OpGetReply), withSeq(1), withStatus(wire.StatusNotFound), withMapVersion(3))},
		{"get_reply_tracked", `GET_REPLY key "key:42" seq 1, value "hello", FlagTracked (a shim's reply to a cache node that it keeps invalidating), map version 3`,
			msg(withOp(wire.OpGetReply), withSeq(1), withValue([]byte("hello")), withFlags(wire.FlagTracked), withMapVersion(3))},
		{"put", `PUT key "key:42" seq 2, value 100 bytes of 0xab, map version 3`,
			msg(withOp(wire.OpPut), withSeq(2), withValue(repeat(0xAB, 100)), withMapVersion(3))},
		{"put_reply_unavailable", `PUT_REPLY key "key:42" seq 2, status unavailable, map version 3`,
			msg(withOp(wire.OpPutReply), withSeq(2), withStatus(wire.StatusUnavailable), withMapVersion(3))},
		{"del", `DEL key "key:42" seq 3, map version 3`,
			msg(withOp(wire.OpDel), withSeq(3), withMapVersion(3))},
		{"del_reply", `DEL_REPLY key "key:42" seq 3, map version 3`,
			msg(withOp(wire.OpDelReply), withSeq(3), withMapVersion(3))},
		{"invalidate", `INVALIDATE key "key:42" seq 4, version 0x0102030405060708, map version 3`,
			msg(withOp(wire.OpInvalidate), withSeq(4), withVersion(version), withMapVersion(3))},
		{"invalidate_ack", `INVALIDATE_ACK key "key:42" seq 4, version 0x0102030405060708, FlagTelemetry, node 7 load 1234`,
			msg(withOp(wire.OpInvalidateAck), withSeq(4), withVersion(version), withTelemetry(7, 1234))},
		{"invalidate_ack_held", `INVALIDATE_ACK key "key:42" seq 4, version 0x0102030405060708, FlagHit|FlagTelemetry (the node held a copy), node 7 load 1234`,
			msg(withOp(wire.OpInvalidateAck), withSeq(4), withVersion(version), withFlags(wire.FlagHit), withTelemetry(7, 1234))},
		{"update", `UPDATE key "key:42" seq 5, value "world", version 0x0102030405060708, map version 3`,
			msg(withOp(wire.OpUpdate), withSeq(5), withValue([]byte("world")), withVersion(version), withMapVersion(3))},
		{"update_ack", `UPDATE_ACK key "key:42" seq 5, version 0x0102030405060708, FlagTelemetry, node 7 load 1234`,
			msg(withOp(wire.OpUpdateAck), withSeq(5), withVersion(version), withTelemetry(7, 1234))},
		{"fetch", `FETCH key "key:42" seq 6, map version 3`,
			msg(withOp(wire.OpFetch), withSeq(6), withMapVersion(3))},
		{"fetch_reply", `FETCH_REPLY key "key:42" seq 6, value "hello", version 99, map version 3`,
			msg(withOp(wire.OpFetchReply), withSeq(6), withValue([]byte("hello")), withVersion(99), withMapVersion(3))},
		{"rmw_incrby", `RMW key "key:42" seq 8, incrby -5 (op byte 1, then the delta as 8 bytes big endian), map version 3`,
			msg(withOp(wire.OpRMW), withSeq(8), withValue(wire.AppendRMW(nil, wire.RMWIncrBy, wire.IncrByArg(-5))), withMapVersion(3))},
		{"rmw_set", `RMW key "key:42" seq 8, set NX GET PX 1500 "v" (op byte 6, condition 1, options 0x01, expiry 8 bytes big endian, value), map version 3`,
			msg(withOp(wire.OpRMW), withSeq(8), withValue(wire.AppendRMW(nil, wire.RMWSet, wire.SetArg(wire.SetNX, wire.SetGet, 1500, []byte("v")))), withMapVersion(3))},
		{"rmw_reply", `RMW_REPLY key "key:42" seq 8, value "37" (incrby's new value in decimal), version 99, map version 3`,
			msg(withOp(wire.OpRMWReply), withSeq(8), withValue([]byte("37")), withVersion(99), withMapVersion(3))},
		{"rmw_reply_invalid", `RMW_REPLY key "key:42" seq 8, status invalid (the stored value is not an integer), map version 3`,
			msg(withOp(wire.OpRMWReply), withSeq(8), withStatus(wire.StatusInvalid), withMapVersion(3))},
		{"more", `MORE key "key:42" seq 9: send message seq 9's 1048576-byte value from byte 65894 (flow control, after a first window of 47 fragments of 1402 bytes)`,
			more(9, 1<<20, 65894)},
		{"ping", `PING key "key:42" seq 7`,
			msg(withOp(wire.OpPing), withSeq(7))},
		{"pong", `PONG key "key:42" seq 7, FlagTelemetry, node 7 load 1234, map version 3`,
			msg(withOp(wire.OpPong), withSeq(7), withTelemetry(7, 1234), withMapVersion(3))},
	}
	signed := []vec{
		{"put_auth", `PUT key "key:42" seq 2, value 100 bytes of 0xab, map version 3, FlagAuth (signed with goldenKey)`,
			msg(withOp(wire.OpPut), withSeq(2), withValue(repeat(0xAB, 100)), withMapVersion(3))},
		{"invalidate_auth", `INVALIDATE key "key:42" seq 4, version 0x0102030405060708, map version 3, FlagAuth (signed with goldenKey)`,
			msg(withOp(wire.OpInvalidate), withSeq(4), withVersion(version), withMapVersion(3))},
		{"invalidate_ack_auth", `INVALIDATE_ACK key "key:42" seq 4, version 0x0102030405060708, FlagHit|FlagTelemetry|FlagAuth (signed with goldenKey), node 7 load 1234`,
			msg(withOp(wire.OpInvalidateAck), withSeq(4), withVersion(version), withFlags(wire.FlagHit), withTelemetry(7, 1234))},
		{"rmw_append_auth", `RMW key "key:42" seq 8, append "tail" (op byte 2, then the suffix), map version 3, FlagAuth (signed with goldenKey)`,
			msg(withOp(wire.OpRMW), withSeq(8), withValue(wire.AppendRMW(nil, wire.RMWAppend, []byte("tail"))), withMapVersion(3))},
		{"fetch_reply_auth", `FETCH_REPLY key "key:42" seq 6, value "hello", version 99, map version 3, FlagAuth (signed with goldenKey)`,
			msg(withOp(wire.OpFetchReply), withSeq(6), withValue([]byte("hello")), withVersion(99), withMapVersion(3))},
		{"renew_auth", `RENEW key "shop-rack-0-1" (the shard) seq 10, map version 3, FlagAuth (signed with goldenKey)`,
			msg(withOp(wire.OpRenew), withKey([]byte("shop-rack-0-1")), withSeq(10), withMapVersion(3))},
		{"renew_reply_auth", `RENEW_REPLY key "shop-rack-0-1" seq 10, FlagEpoch epoch 0x0000000700000002 (NodeID 7, Load 2), map version 3, FlagAuth (signed with goldenKey)`,
			msg(withOp(wire.OpRenewReply), withKey([]byte("shop-rack-0-1")), withSeq(10), withEpoch(7<<32|2), withMapVersion(3))},
		{"update_epoch_auth", `UPDATE key "key:42" seq 5, value "world", version 0x0102030405060708, FlagEpoch epoch 0x0000000700000002, map version 3, FlagAuth (signed with goldenKey)`,
			msg(withOp(wire.OpUpdate), withSeq(5), withValue([]byte("world")), withVersion(version), withEpoch(7<<32|2), withMapVersion(3))},
	}
	var out []golden
	for _, v := range vecs {
		b, err := wire.Encode(v.m, wire.DefaultDatagram)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		out = append(out, golden{v.name, fmt.Sprintf("%s: %s; %d bytes", v.name, v.comment, len(b)), b})
	}
	for _, v := range signed {
		b, _, err := wire.AppendSignedDatagram(nil, v.m, 0, wire.DefaultDatagram, goldenKeyring(t))
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		out = append(out, golden{v.name, fmt.Sprintf("%s: %s; %d bytes", v.name, v.comment, len(b)), b})
	}
	bigSigned := msg(withOp(wire.OpPut), withKey([]byte("bigauth")), withSeq(9), withValue(pattern(1000, 251)), withMapVersion(3))
	for off, i := 0, 0; off < len(bigSigned.Value); i++ {
		var b []byte
		var err error
		b, off, err = wire.AppendSignedDatagram(nil, bigSigned, off, wire.MinDatagram, goldenKeyring(t))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, golden{
			name: fmt.Sprintf("auth_fragment_%d", i),
			comment: fmt.Sprintf("auth_fragment_%d: a datagram of PUT key \"bigauth\" seq 9, value 1000 bytes i%%251, map version 3, at MinDatagram (%d), FlagAuth (each fragment signed with goldenKey); %d bytes",
				i, wire.MinDatagram, len(b)),
			data: b,
		})
	}
	big := msg(withOp(wire.OpPut), withKey([]byte("big")), withSeq(8), withValue(pattern(3000, 251)), withMapVersion(3))
	frags := datagrams(t, big, wire.MinDatagram)
	for i, b := range frags {
		out = append(out, golden{
			name: fmt.Sprintf("fragment_%d", i),
			comment: fmt.Sprintf("fragment_%d: datagram %d of %d of PUT key \"big\" seq 8, value 3000 bytes i%%251, map version 3, at MinDatagram (%d); %d bytes",
				i, i+1, len(frags), wire.MinDatagram, len(b)),
			data: b,
		})
	}
	return out
}

// formatGolden renders a datagram as a golden file: a comment line, then
// 32 bytes of lowercase hex a line.
func formatGolden(g golden) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# %s\n", g.comment)
	for b := g.data; len(b) > 0; {
		n := min(len(b), 32)
		buf.WriteString(hex.EncodeToString(b[:n]))
		buf.WriteByte('\n')
		b = b[n:]
	}
	return buf.Bytes()
}

// readGolden reads a golden file's datagram.
func readGolden(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []byte
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if len(s) > 64 || s != strings.ToLower(s) {
			return nil, fmt.Errorf("%s:%d: want at most 64 lowercase hex digits", path, line)
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		out = append(out, b...)
	}
	return out, sc.Err()
}

// goldenFiles returns the golden files' paths, sorted.
func goldenFiles(t testing.TB) []string { return goldenFilesIn(t, goldenDir) }

// goldenFilesIn returns the paths of dir's golden files, sorted.
func goldenFilesIn(t testing.TB, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.hex"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 && !*update {
		t.Fatalf("no golden files in %s; run go test -update", dir)
	}
	return paths
}

func TestGolden(t *testing.T) { checkGoldenDir(t, goldenDir, goldenVectors(t)) }

// checkGoldenDir checks that dir holds exactly the vectors' files, each
// in canonical form with the vector's bytes; with -update it writes them
// first.
func checkGoldenDir(t *testing.T, dir string, vectors []golden) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, g := range vectors {
			if err := os.WriteFile(filepath.Join(dir, g.name+".hex"), formatGolden(g), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var names []string
	for _, g := range vectors {
		names = append(names, g.name+".hex")
		t.Run(g.name, func(t *testing.T) {
			path := filepath.Join(dir, g.name+".hex")
			want, err := readGolden(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(g.data, want) {
				t.Errorf("encoding of %s changed; run go test -update if intended\n got %x\nwant %x", g.name, g.data, want)
			}
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(file, formatGolden(g)) {
				t.Errorf("%s is not in canonical form; run go test -update", path)
			}
		})
	}
	for _, p := range goldenFilesIn(t, dir) {
		if !slices.Contains(names, filepath.Base(p)) {
			t.Errorf("%s has no vector; delete it or add one", p)
		}
	}
}

// TestGoldenReencode parses every golden file and encodes the message again:
// complete packets alone, fragments after reassembly at the datagram size of
// the first fragment.
func TestGoldenReencode(t *testing.T) {
	type group struct {
		files []string
		data  [][]byte
	}
	type msgID struct {
		op     wire.Op
		seq    uint64
		digest hashing.Digest
	}
	groups := map[msgID]*group{}
	r := wire.NewReassembler(wire.ReassemblyConfig{})
	for _, path := range goldenFiles(t) {
		b, err := readGolden(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := wire.Parse(b)
		if err != nil {
			t.Fatalf("%s: Parse() error = %v", path, err)
		}
		if p.Complete() || p.Op == wire.OpMore {
			m := wire.Message{Header: p.Header, Key: p.Key, Value: p.Fragment} // MORE: no value, ValueLen and FragOffset its own
			got, _, err := appendLike(t, &m, 0, wire.MaxDatagram)
			if err != nil || !bytes.Equal(got, b) {
				t.Errorf("%s: re-encoded to %x, %v\nwant %x", path, got, err, b)
			}
			continue
		}
		id := msgID{p.Op, p.Seq, p.Digest}
		g := groups[id]
		if g == nil {
			g = &group{}
			groups[id] = g
		}
		g.files, g.data = append(g.files, path), append(g.data, b)
		m, ok := r.Add(senderA, &p, t0)
		if !ok {
			continue
		}
		size := len(g.data[0])
		var got [][]byte
		for off := 0; off < len(m.Value); {
			var d []byte
			d, off, err = appendLike(t, &m, off, size)
			if err != nil {
				t.Fatalf("%s: AppendDatagram() error = %v", path, err)
			}
			got = append(got, d)
		}
		// The files are read in name order; fragment order does not
		// matter, so compare as sets.
		want := slices.Clone(g.data)
		slices.SortFunc(want, bytes.Compare)
		slices.SortFunc(got, bytes.Compare)
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%v: re-encoded fragments differ", g.files)
		}
		delete(groups, id)
	}
	for _, g := range groups {
		t.Errorf("%v: fragments of an incomplete message", g.files)
	}
	if s := r.Stats(); s.Duplicates != 0 || s.Inconsistent != 0 {
		t.Errorf("reassembly stats %+v", s)
	}
}

// TestHeaderOffsets pins every header field at the offset and size that the
// table in doc.go documents: it reads the table, and encodes a header whose
// fields all hold distinct values.
func TestHeaderOffsets(t *testing.T) {
	key := []byte("offsets")
	digest := hashing.Digest{0xA0, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0xAF}
	const valueLen, fragOff = 0x00054321, 0x00012345
	value := pattern(valueLen, 251)
	m := msg(withOp(wire.OpFetchReply), withStatus(wire.StatusOverloaded), withFlags(wire.FlagHit|wire.FlagDirect),
		withKey(key), withSeq(0x1122334455667788), withDigest(digest), withTelemetry(0x21222324, 0x31323334),
		withValue(value), withVersion(0x4142434445464748), withMapVersion(0x5152535455565758))
	b, next, err := wire.AppendDatagram(nil, m, fragOff, wire.MaxDatagram)
	if err != nil {
		t.Fatal(err)
	}
	be := func(size int, v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v)[8-size:] }
	fields := []struct {
		off, size int
		doc       string // the start of the field's name in doc.go
		want      []byte
	}{
		{0, 2, "magic", []byte{0xDC, 0xAC}},
		{2, 1, "protocol version", []byte{1}},
		{3, 1, "op", []byte{12}},
		{4, 1, "flags", []byte{byte(wire.FlagHit | wire.FlagTelemetry | wire.FlagFragmented | wire.FlagDirect)}},
		{5, 1, "status", []byte{6}},
		{6, 2, "key length", be(2, uint64(len(key)))},
		{8, 8, "sequence number", be(8, 0x1122334455667788)},
		{16, 16, "key digest", digest[:]},
		{32, 4, "node id", be(4, 0x21222324)},
		{36, 4, "node load", be(4, 0x31323334)},
		{40, 4, "value length", be(4, valueLen)},
		{44, 4, "fragment offset", be(4, fragOff)},
		{48, 8, "value version", be(8, 0x4142434445464748)},
		{56, 8, "partition map version", be(8, 0x5152535455565758)},
		{64, len(key), "key", key},
		{64 + len(key), next - fragOff, "key, then value", value[fragOff:next]},
	}
	for _, f := range fields {
		if got := b[f.off : f.off+f.size]; !bytes.Equal(got, f.want) {
			t.Errorf("%s at [%d, %d) = %x, want %x", f.doc, f.off, f.off+f.size, got, f.want)
		}
	}
	if 64+len(key)+next-fragOff != len(b) {
		t.Errorf("datagram of %d bytes, fields end at %d", len(b), 64+len(key)+next-fragOff)
	}

	// The table in doc.go: "//	offset size field", then one line a field.
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^//\t\s*(\d+)\s+(\d+|…)\s+(\S.*)$`)
	var docRows [][]string
	for line := range strings.Lines(string(src)) {
		if mm := row.FindStringSubmatch(strings.TrimRight(line, "\n")); mm != nil {
			docRows = append(docRows, mm[1:])
		}
	}
	// The key and value share the doc's last row.
	header := fields[:len(fields)-2]
	if len(docRows) != len(header)+1 {
		t.Fatalf("doc.go table has %d rows, want %d header fields and the payload: %q", len(docRows), len(header), docRows)
	}
	for i, f := range header {
		d := docRows[i]
		if d[0] != strconv.Itoa(f.off) || d[1] != strconv.Itoa(f.size) || !strings.HasPrefix(d[2], f.doc) {
			t.Errorf("doc.go row %d = %q, want offset %d size %d field %q", i, d, f.off, f.size, f.doc)
		}
	}
	if last := docRows[len(docRows)-1]; last[0] != strconv.Itoa(wire.HeaderLen) || !strings.HasPrefix(last[2], "key, then value") {
		t.Errorf("doc.go last row = %q, want the key and value at %d", last, wire.HeaderLen)
	}
	if end := header[len(header)-1]; end.off+end.size != wire.HeaderLen {
		t.Errorf("header fields end at %d, HeaderLen is %d", end.off+end.size, wire.HeaderLen)
	}
}
