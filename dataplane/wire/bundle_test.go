package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/distcache/distcache/dataplane/wire"
)

// bundleGoldenDir holds the bundle vectors: apart from testdata/golden,
// whose files are single datagrams that Parse takes.
const bundleGoldenDir = "testdata/golden-bundle"

// bundleVectors are the golden bundles: each record is a golden datagram.
func bundleVectors(t testing.TB) []golden {
	t.Helper()
	enc := func(m *wire.Message) []byte {
		b, _, err := appendLike(t, m, 0, wire.DefaultDatagram)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gets := wire.AppendBundle(nil,
		enc(msg(withOp(wire.OpGet), withSeq(1), withMapVersion(3))),
		enc(msg(withOp(wire.OpGet), withKey([]byte("key:7")), withSeq(2), withMapVersion(3))),
		enc(msg(withOp(wire.OpGet), withKey([]byte("key:9")), withSeq(3), withMapVersion(3))))
	replies := wire.AppendBundle(nil,
		enc(msg(withOp(wire.OpGetReply), withSeq(1), withValue([]byte("hello")), withFlags(wire.FlagHit), withTelemetry(7, 1234), withVersion(99), withMapVersion(3))),
		enc(msg(withOp(wire.OpGetReply), withKey([]byte("key:7")), withSeq(2), withStatus(wire.StatusNotFound), withTelemetry(7, 1234), withMapVersion(3))))
	mixed := wire.AppendBundle(nil,
		enc(msg(withOp(wire.OpGet), withSeq(4), withMapVersion(3))),
		enc(msg(withOp(wire.OpPut), withSeq(5), withValue([]byte("world")), withFlags(wire.FlagAuth), withMapVersion(3))))
	return []golden{
		{"gets", `BUNDLE of 3 GETs: key "key:42" seq 1, key "key:7" seq 2, key "key:9" seq 3, map version 3; ` + strconv.Itoa(len(gets)) + " bytes", gets},
		{"get_replies", `BUNDLE of 2 GET_REPLYs: key "key:42" seq 1 value "hello" FlagHit|FlagTelemetry node 7 load 1234 version 99; key "key:7" seq 2 status not_found; map version 3; ` + strconv.Itoa(len(replies)) + " bytes", replies},
		{"get_and_signed_put", `BUNDLE of GET key "key:42" seq 4 and PUT key "key:42" seq 5 value "world" FlagAuth (the record signed with goldenKey; the bundle is not), map version 3; ` + strconv.Itoa(len(mixed)) + " bytes", mixed},
	}
}

// TestBundleGolden checks the bundle vectors' files (as TestGolden does
// the datagrams'), then that each splits into records that parse and
// bundle again to the same bytes.
func TestBundleGolden(t *testing.T) {
	vectors := bundleVectors(t)
	checkGoldenDir(t, bundleGoldenDir, vectors)
	for _, g := range vectors {
		t.Run(g.name+"/split", func(t *testing.T) {
			want := g.data
			recs, err := wire.SplitBundle(nil, want)
			if err != nil {
				t.Fatalf("SplitBundle() error = %v", err)
			}
			for i, r := range recs {
				if _, err := wire.Parse(r); err != nil {
					t.Errorf("record %d: Parse() error = %v", i, err)
				}
			}
			if msgs, err := wire.AppendMessages(nil, want); err != nil || !slices.EqualFunc(msgs, recs, bytes.Equal) {
				t.Errorf("AppendMessages() = %d messages, %v; want the %d records", len(msgs), err, len(recs))
			}
			if msgs, err := wire.AppendMessages(nil, recs[0]); err != nil || len(msgs) != 1 || !bytes.Equal(msgs[0], recs[0]) {
				t.Errorf("AppendMessages() of a lone datagram = %d messages, %v; want the datagram", len(msgs), err)
			}
			if got := wire.AppendBundle(nil, recs...); !bytes.Equal(got, want) {
				t.Errorf("records re-bundled differently:\n got %x\nwant %x", got, want)
			}
			if _, err := wire.Parse(want); !errors.Is(err, wire.ErrOp) {
				t.Errorf("Parse() of a bundle: error = %v, want ErrOp", err)
			}
			if op := wire.PeekOp(want); op != wire.OpBundle {
				t.Errorf("PeekOp() = %v, want BUNDLE", op)
			}
		})
	}
}

func TestSplitBundleErrors(t *testing.T) {
	get := func(seq uint64) []byte {
		b, err := wire.Encode(msg(withOp(wire.OpGet), withSeq(seq)), wire.DefaultDatagram)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := wire.AppendBundle(nil, get(1), get(2))
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:wire.HeaderLen-1], wire.ErrTruncated},
		{"magic", edit(func(b []byte) []byte { b[0] = 0; return b }), wire.ErrMagic},
		{"version", edit(func(b []byte) []byte { b[2] = 9; return b }), wire.ErrVersion},
		{"not a bundle", get(1), wire.ErrBundle},
		{"flags set", edit(func(b []byte) []byte { b[4] = byte(wire.FlagAuth); return b }), wire.ErrBundle},
		{"reserved byte set", edit(func(b []byte) []byte { b[63] = 1; return b }), wire.ErrBundle},
		{"declared length too long", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[40:], uint32(len(b))); return b }), wire.ErrBundle},
		{"cut record", edit(func(b []byte) []byte {
			b = b[:len(b)-1]
			binary.BigEndian.PutUint32(b[40:], uint32(len(b)-wire.HeaderLen))
			return b
		}), wire.ErrTruncated},
		{"cut prefix", edit(func(b []byte) []byte {
			b = append(b, 0)
			binary.BigEndian.PutUint32(b[40:], uint32(len(b)-wire.HeaderLen))
			return b
		}), wire.ErrTruncated},
		{"record shorter than a header", wire.AppendBundle(nil, get(1), get(2)[:wire.HeaderLen-1]), wire.ErrBundle},
		{"one record", wire.AppendBundle(nil, get(1)), wire.ErrBundle},
		{"no record", wire.AppendBundle(nil), wire.ErrBundle},
		{"nested", wire.AppendBundle(nil, get(1), good), wire.ErrBundle},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := [][]byte{[]byte("kept")}
			recs, err := wire.SplitBundle(prev, c.b)
			if !errors.Is(err, c.want) {
				t.Fatalf("SplitBundle() error = %v, want %v", err, c.want)
			}
			if len(recs) != 1 || string(recs[0]) != "kept" {
				t.Errorf("SplitBundle() changed recs on error: %q", recs)
			}
		})
	}
}

var bundleErrors = []error{wire.ErrTruncated, wire.ErrMagic, wire.ErrVersion, wire.ErrBundle}

func FuzzSplitBundle(f *testing.F) {
	for _, g := range bundleVectors(f) {
		f.Add(g.data)
		for _, n := range []int{0, wire.HeaderLen, wire.HeaderLen + 1, wire.HeaderLen + 2, len(g.data) - 1} {
			f.Add(g.data[:n])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		recs, err := wire.SplitBundle(nil, b)
		if !bytes.Equal(in, b) {
			t.Fatal("SplitBundle changed its input")
		}
		if err != nil {
			if len(recs) != 0 {
				t.Fatalf("SplitBundle() returned %d records with error %v", len(recs), err)
			}
			if matched := matches(err, bundleErrors); matched != 1 {
				t.Fatalf("SplitBundle() error %q matches %d of its errors, want 1", err, matched)
			}
			return
		}
		if len(recs) < 2 {
			t.Fatalf("SplitBundle() accepted %d records", len(recs))
		}
		if got := wire.AppendBundle(nil, recs...); !bytes.Equal(got, b) {
			t.Fatalf("accepted bundle re-bundles differently:\n got %x\nwant %x", got, b)
		}
		if slices.ContainsFunc(recs, func(r []byte) bool { return wire.PeekOp(r) == wire.OpBundle }) {
			t.Fatal("SplitBundle() returned a nested bundle")
		}
		for _, r := range recs {
			_, _ = wire.Parse(r) // records are parsed alone; that must not panic either
		}
	})
}
