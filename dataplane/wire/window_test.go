package wire_test

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

// moreBytes is a valid MORE datagram: message seq 9 of 200,000 bytes,
// from byte 65,894.
func moreBytes(t *testing.T) []byte {
	t.Helper()
	b, err := wire.Encode(more(9, 200_000, 65_894), wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseMore(t *testing.T) {
	b := moreBytes(t)
	p, err := wire.Parse(b)
	if err != nil || p.Op != wire.OpMore || p.Seq != 9 || p.ValueLen != 200_000 || p.FragOffset != 65_894 || string(p.Key) != "key:42" {
		t.Fatalf("Parse() = %+v, %v", p, err)
	}
	if _, err := wire.Decode(b); !errors.Is(err, wire.ErrValue) {
		t.Errorf("Decode() error = %v, want ErrValue: MORE is no message", err)
	}
	u32 := func(off int, v uint32) []byte {
		c := append([]byte(nil), b...)
		binary.BigEndian.PutUint32(c[off:], v)
		return c
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"value bytes", append(append([]byte(nil), b...), 'x'), wire.ErrValue},
		{"from byte 0", u32(44, 0), wire.ErrValue},
		{"from the value's end", u32(44, 200_000), wire.ErrValue},
		{"from past the value's end", u32(44, 300_000), wire.ErrValue},
		{"value over the limit", u32(40, wire.MaxValueLen+1), wire.ErrValue},
		{"fragmented flag", func() []byte { c := append([]byte(nil), b...); c[4] = byte(wire.FlagFragmented); return c }(), wire.ErrFlags},
		{"hit flag", func() []byte { c := append([]byte(nil), b...); c[4] = byte(wire.FlagHit); return c }(), wire.ErrFlags},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := wire.Parse(tc.b); !errors.Is(err, tc.want) {
				t.Errorf("Parse() error = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestEncodeMoreRefuses(t *testing.T) {
	tests := []struct {
		name string
		m    wire.Message
	}{
		{"from byte 0", wire.NewMore(1, []byte("k"), 100, 0)},
		{"from the end", wire.NewMore(1, []byte("k"), 100, 100)},
		{"no key", wire.NewMore(1, nil, 100, 10)},
		{"a value", func() wire.Message { m := wire.NewMore(1, []byte("k"), 100, 10); m.Value = []byte("v"); return m }()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if b, _, err := wire.AppendDatagram(nil, &tc.m, 0, wire.DefaultDatagram); err == nil {
				t.Errorf("AppendDatagram() = %x, want an error", b)
			}
		})
	}
}

// TestReceiveAsksPerWindow feeds a message of several windows in order and
// checks that Receive asks for the next window exactly when the last one
// is complete, from its first missing byte.
func TestReceiveAsksPerWindow(t *testing.T) {
	m := bigMsg(1, 4*wire.Window, 0) // the last window ends past the value: 3 asks
	ps := packets(t, m, wire.DefaultDatagram)
	r := wire.NewReassembler(wire.ReassemblyConfig{})
	var asks []uint32
	held := uint32(0)
	for i := range ps {
		got, done, from := r.Receive(senderA, &ps[i], t0)
		held += uint32(len(ps[i].Fragment))
		if from != 0 {
			if from != held {
				t.Fatalf("fragment %d: asked from %d, holding %d", i, from, held)
			}
			asks = append(asks, from)
		}
		if done {
			if i != len(ps)-1 {
				t.Fatalf("done at fragment %d of %d", i, len(ps))
			}
			checkMessage(t, &got, m)
		}
	}
	if len(asks) != 3 {
		t.Fatalf("asked %v, want one ask per window after the first", asks)
	}
	for i, a := range asks {
		if a < uint32(i+1)*wire.Window || (i > 0 && a-asks[i-1] < wire.Window) {
			t.Errorf("ask %d from %d: before a whole window arrived (asks %v)", i, a, asks)
		}
	}
	if s := r.Stats(); s.Asks != 3 || s.Completed != 1 {
		t.Errorf("Stats() = %+v", s)
	}
}

// TestReceiveAsksAgain checks the asks that repair a lost window: a
// fragment held already, arriving again, asks once per AskAgainAfter from
// the first missing byte; AskAgain asks for a pending message whatever
// arrived.
func TestReceiveAsksAgain(t *testing.T) {
	const again = 50 * time.Millisecond
	m := bigMsg(1, 2*wire.Window, 0)
	ps := packets(t, m, wire.DefaultDatagram)
	r := wire.NewReassembler(wire.ReassemblyConfig{AskAgainAfter: again})
	// Fragments 0-2 arrive; the rest of the first window is lost.
	for i := range 3 {
		if _, _, from := r.Receive(senderA, &ps[i], t0); from != 0 {
			t.Fatalf("fragment %d asked from %d inside the first window", i, from)
		}
	}
	held := uint32(3 * len(ps[0].Fragment))
	steps := []struct {
		name string
		at   time.Duration
		want uint32
	}{
		{"duplicate at once", 0, 0},
		{"duplicate before AskAgainAfter", again - time.Millisecond, 0},
		{"duplicate after AskAgainAfter", again, held},
		{"duplicate right after that ask", again + time.Millisecond, 0},
		{"duplicate AskAgainAfter later", 2 * again, held},
	}
	for _, s := range steps {
		if _, _, from := r.Receive(senderA, &ps[1], t0.Add(s.at)); from != s.want {
			t.Errorf("%s: asked from %d, want %d", s.name, from, s.want)
		}
	}
	from, n, ok := r.AskAgain(senderA, wire.OpPut, 1, t0.Add(3*again))
	if !ok || from != held || n != uint32(len(m.Value)) {
		t.Errorf("AskAgain() = %d, %d, %v; want %d, %d, true", from, n, ok, held, len(m.Value))
	}
	if _, _, ok := r.AskAgain(senderA, wire.OpGetReply, 1, t0); ok {
		t.Error("AskAgain() of a message never received = true")
	}
	if s := r.Stats(); s.Asks != 3 || s.Duplicates != 5 {
		t.Errorf("Stats() = %+v, want 3 asks, 5 duplicates", s)
	}
}

// TestAskAgainNeedsTheStart checks that a message whose first fragment is
// missing asks for nothing: its sender has the whole message to resend.
func TestAskAgainNeedsTheStart(t *testing.T) {
	ps := packets(t, bigMsg(1, 2*wire.Window, 0), wire.DefaultDatagram)
	r := wire.NewReassembler(wire.ReassemblyConfig{})
	r.Receive(senderA, &ps[1], t0)
	if _, _, from := r.Receive(senderA, &ps[1], t0.Add(time.Second)); from != 0 {
		t.Errorf("duplicate without the first fragment asked from %d", from)
	}
	if _, _, ok := r.AskAgain(senderA, wire.OpPut, 1, t0.Add(time.Second)); ok {
		t.Error("AskAgain() without the first fragment = true")
	}
}

// TestExpiryCountsFromTheLastFragment checks that a message that keeps
// arriving, a window at a time, outlives the timeout counted from its
// first fragment, and expires once its fragments stop.
func TestExpiryCountsFromTheLastFragment(t *testing.T) {
	const timeout = 2 * time.Second
	ps := packets(t, bigMsg(1, 2*wire.Window, 0), wire.DefaultDatagram)
	r := wire.NewReassembler(wire.ReassemblyConfig{Timeout: timeout})
	r.Receive(senderA, &ps[0], t0)
	r.Receive(senderA, &ps[1], t0.Add(timeout-time.Millisecond))
	r.Expire(t0.Add(timeout + time.Millisecond))
	if s := r.Stats(); s.Pending != 1 || s.Expired != 0 {
		t.Fatalf("a timeout after the first fragment, with a later one: Stats() = %+v, want it pending", s)
	}
	r.Expire(t0.Add(2*timeout - time.Millisecond))
	if s := r.Stats(); s.Pending != 0 || s.Expired != 1 {
		t.Fatalf("a timeout after the last fragment: Stats() = %+v, want it expired", s)
	}
}
