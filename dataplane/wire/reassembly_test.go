package wire_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
)

var (
	t0      = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	senderA = netip.MustParseAddrPort("198.18.0.1:7000")
	senderB = netip.MustParseAddrPort("198.18.0.2:7000")
)

// packets parses every datagram of m at size.
func packets(t testing.TB, m *wire.Message, size int) []wire.Packet {
	t.Helper()
	var ps []wire.Packet
	for _, b := range datagrams(t, m, size) {
		p, err := wire.Parse(b)
		if err != nil {
			t.Fatalf("Parse() error = %v", err)
		}
		ps = append(ps, p)
	}
	return ps
}

// bigMsg returns a PUT of n value bytes i%251+salt with sequence number seq;
// at MinDatagram its 6-byte key leaves 570 value bytes a datagram.
func bigMsg(seq uint64, n int, salt byte) *wire.Message {
	v := pattern(n, 251)
	for i := range v {
		v[i] += salt
	}
	return msg(withOp(wire.OpPut), withSeq(seq), withValue(v), withVersion(seq*10), withMapVersion(3))
}

// checkMessage checks that got is m reassembled.
func checkMessage(t testing.TB, got, m *wire.Message) {
	t.Helper()
	if !bytes.Equal(got.Value, m.Value) {
		t.Fatalf("value of %d bytes differs from the original's %d", len(got.Value), len(m.Value))
	}
	if !bytes.Equal(got.Key, m.Key) {
		t.Fatalf("key %q, want %q", got.Key, m.Key)
	}
	if got.Op != m.Op || got.Seq != m.Seq || got.ValueVersion != m.ValueVersion || got.MapVersion != m.MapVersion ||
		got.FragOffset != 0 || got.ValueLen != uint32(len(m.Value)) {
		t.Fatalf("header %+v, want that of %+v", got.Header, m.Header)
	}
}

func TestReassembleOrders(t *testing.T) {
	m := bigMsg(1, 3000, 0)
	n := len(packets(t, m, wire.MinDatagram))
	if n < 4 {
		t.Fatalf("only %d fragments", n)
	}
	inOrder := make([]int, n)
	for i := range inOrder {
		inOrder[i] = i
	}
	reversed := slices.Clone(inOrder)
	slices.Reverse(reversed)
	rng := rand.New(rand.NewPCG(1, 2))
	shuffled := slices.Clone(inOrder)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	// Every fragment twice, shuffled: only the last new fragment completes.
	var dups []int
	for range 2 {
		dups = append(dups, inOrder...)
	}
	rng.Shuffle(len(dups), func(i, j int) { dups[i], dups[j] = dups[j], dups[i] })

	eachTwice := make([]int, 0, 2*n)
	for i := range n {
		eachTwice = append(eachTwice, i, i)
	}
	// Fragments after the one that completes the message would start a new
	// message, so an order stops there; the duplicates before it count.
	tests := []struct {
		name  string
		order []int
	}{
		{"in order", inOrder},
		{"reversed", reversed},
		{"shuffled", shuffled},
		{"first twice", append([]int{0}, inOrder...)},
		{"each twice in a row", eachTwice},
		{"shuffled with duplicates", dups},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := packets(t, m, wire.MinDatagram)
			r := wire.NewReassembler(wire.ReassemblyConfig{})
			var got *wire.Message
			var dups uint64
			seen := map[int]bool{}
			for _, i := range tc.order {
				if seen[i] {
					dups++
				}
				seen[i] = true
				if out, ok := r.Add(senderA, &ps[i], t0); ok {
					got = &out
					break
				}
			}
			if got == nil {
				t.Fatal("message not completed")
			}
			checkMessage(t, got, m)
			want := wire.ReassemblyStats{Completed: 1, Duplicates: dups}
			if s := r.Stats(); s != want {
				t.Errorf("Stats() = %+v, want %+v", s, want)
			}
		})
	}
}

// TestReassembleCopies checks that a reassembled message owns its bytes.
func TestReassembleCopies(t *testing.T) {
	m := bigMsg(1, 2000, 0)
	ds := datagrams(t, m, wire.MinDatagram)
	r := wire.NewReassembler(wire.ReassemblyConfig{})
	var got wire.Message
	for i, b := range ds {
		p, err := wire.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		out, ok := r.Add(senderA, &p, t0)
		if ok != (i == len(ds)-1) {
			t.Fatalf("fragment %d: completed = %v", i, ok)
		}
		got = out
		clear(b) // a receive buffer reused for the next datagram
	}
	checkMessage(t, &got, m)
}

func TestReassemblePassesCompleteThrough(t *testing.T) {
	m := msg(withOp(wire.OpGetReply), withValue([]byte("hello")), withTelemetry(7, 1234))
	b, err := wire.Encode(m, wire.DefaultDatagram)
	if err != nil {
		t.Fatal(err)
	}
	p, err := wire.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	r := wire.NewReassembler(wire.ReassemblyConfig{})
	got, ok := r.Add(senderA, &p, t0)
	if !ok {
		t.Fatal("complete packet not passed through")
	}
	for i := range b {
		b[i] = 0xEE
	}
	checkMessage(t, &got, m)
	if got.NodeID != 7 || got.Load != 1234 || !got.Has(wire.FlagTelemetry) {
		t.Errorf("header %+v lost telemetry", got.Header)
	}
	if s := r.Stats(); s != (wire.ReassemblyStats{Completed: 1}) {
		t.Errorf("Stats() = %+v", s)
	}
	// The same packet again is a new message, not a duplicate.
	p2, err := wire.Parse(must(wire.Encode(m, wire.DefaultDatagram)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Add(senderA, &p2, t0); !ok {
		t.Error("second complete packet not passed through")
	}
	if s := r.Stats(); s != (wire.ReassemblyStats{Completed: 2}) {
		t.Errorf("Stats() = %+v", s)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestReassembleInterleaved(t *testing.T) {
	type stream struct {
		src netip.AddrPort
		m   *wire.Message
	}
	getReply := bigMsg(1, 2500, 5)
	getReply.Op = wire.OpGetReply
	streams := []stream{
		{senderA, bigMsg(1, 2500, 1)},
		{senderA, bigMsg(2, 2500, 2)},
		{senderB, bigMsg(1, 2500, 3)},
		{senderB, bigMsg(2, 2000, 4)},
		{senderA, getReply}, // same sender, seq and key as the first; other op
	}
	ps := make([][]wire.Packet, len(streams))
	for i, s := range streams {
		ps[i] = packets(t, s.m, wire.MinDatagram)
	}
	r := wire.NewReassembler(wire.ReassemblyConfig{})
	got := make([]*wire.Message, len(streams))
	for j := 0; ; j++ {
		added := false
		for i, s := range streams {
			if j >= len(ps[i]) {
				continue
			}
			added = true
			out, ok := r.Add(s.src, &ps[i][j], t0)
			if ok != (j == len(ps[i])-1) {
				t.Fatalf("stream %d fragment %d: completed = %v", i, j, ok)
			}
			if ok {
				got[i] = &out
			}
		}
		if !added {
			break
		}
		if s := r.Stats(); s.Inconsistent != 0 || s.Duplicates != 0 {
			t.Fatalf("round %d: Stats() = %+v", j, s)
		}
	}
	for i, s := range streams {
		checkMessage(t, got[i], s.m)
	}
	if s := r.Stats(); s != (wire.ReassemblyStats{Completed: uint64(len(streams))}) {
		t.Errorf("Stats() = %+v", s)
	}
}

func TestReassembleInconsistent(t *testing.T) {
	base := bigMsg(1, 2000, 0)
	variant := func(f func(m *wire.Message)) *wire.Message {
		m := *base
		f(&m)
		return &m
	}
	tests := []struct {
		name  string
		other *wire.Message
	}{
		{"value version", variant(func(m *wire.Message) { m.ValueVersion++ })},
		{"map version", variant(func(m *wire.Message) { m.MapVersion++ })},
		{"key", variant(func(m *wire.Message) { m.Key = []byte("key:43") })},
		{"value length", variant(func(m *wire.Message) { m.Value = m.Value[:1900] })},
		{"status", variant(func(m *wire.Message) { m.Status = wire.StatusInternal })},
		{"flags", variant(func(m *wire.Message) { m.Flags |= wire.FlagDirect })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := packets(t, base, wire.MinDatagram)
			others := packets(t, tc.other, wire.MinDatagram)
			r := wire.NewReassembler(wire.ReassemblyConfig{})
			if _, ok := r.Add(senderA, &ps[0], t0); ok {
				t.Fatal("completed after one fragment")
			}
			// The other message's second fragment would fill a hole.
			if _, ok := r.Add(senderA, &others[1], t0); ok {
				t.Fatal("inconsistent fragment completed a message")
			}
			if s := r.Stats(); s.Inconsistent != 1 || s.Pending != 1 {
				t.Fatalf("Stats() = %+v, want 1 inconsistent, 1 pending", s)
			}
			var got *wire.Message
			for i := 1; i < len(ps); i++ {
				if out, ok := r.Add(senderA, &ps[i], t0); ok {
					got = &out
				}
			}
			if got == nil {
				t.Fatal("message not completed after the inconsistent fragment")
			}
			checkMessage(t, got, base)
			if s := r.Stats(); s != (wire.ReassemblyStats{Completed: 1, Inconsistent: 1}) {
				t.Errorf("Stats() = %+v", s)
			}
		})
	}
}

func TestReassembleOverlap(t *testing.T) {
	m := bigMsg(1, 3000, 0)
	c := wire.FragmentCapacity(wire.MinDatagram, len(m.Key))
	at := func(off int) wire.Packet {
		b, _, err := wire.AppendDatagram(nil, m, off, wire.MinDatagram)
		if err != nil {
			t.Fatal(err)
		}
		p, err := wire.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name             string
		offs             []int
		wantDuplicates   uint64
		wantInconsistent uint64
	}{
		{"same span", []int{c, c}, 1, 0},
		{"shifted span", []int{c, c + 100}, 0, 1},
		{"span starting inside", []int{c, c - 100}, 0, 1},
		{"last fragment shorter, overlapping", []int{3000 - 10, 3000 - 20}, 0, 1},
		{"adjacent spans", []int{0, c}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := wire.NewReassembler(wire.ReassemblyConfig{})
			for _, off := range tc.offs {
				p := at(off)
				if _, ok := r.Add(senderA, &p, t0); ok {
					t.Fatal("completed")
				}
			}
			s := r.Stats()
			if s.Duplicates != tc.wantDuplicates || s.Inconsistent != tc.wantInconsistent || s.Pending != 1 || s.PendingBytes != 3000 {
				t.Errorf("Stats() = %+v, want %d duplicates, %d inconsistent", s, tc.wantDuplicates, tc.wantInconsistent)
			}
		})
	}
}

func TestReassembleTimeout(t *testing.T) {
	const timeout = time.Second
	first, second := bigMsg(1, 2000, 1), bigMsg(2, 2000, 2)
	fp, sp := packets(t, first, wire.MinDatagram), packets(t, second, wire.MinDatagram)
	r := wire.NewReassembler(wire.ReassemblyConfig{Timeout: timeout})
	r.Add(senderA, &fp[0], t0)
	r.Add(senderA, &sp[0], t0.Add(500*time.Millisecond))

	r.Expire(t0.Add(timeout - time.Nanosecond))
	if s := r.Stats(); s.Expired != 0 || s.Pending != 2 {
		t.Fatalf("before the timeout: Stats() = %+v", s)
	}
	r.Expire(t0.Add(timeout))
	if s := r.Stats(); s.Expired != 1 || s.Pending != 1 || s.PendingBytes != 2000 {
		t.Fatalf("at the timeout: Stats() = %+v, want 1 expired, 1 pending", s)
	}
	// The rest of the first message starts a new one that cannot complete.
	now := t0.Add(timeout + 100*time.Millisecond)
	for i := 1; i < len(fp); i++ {
		if _, ok := r.Add(senderA, &fp[i], now); ok {
			t.Fatal("expired message completed")
		}
	}
	// Add expires too: the second message goes at its own timeout.
	later := t0.Add(500*time.Millisecond + timeout)
	if _, ok := r.Add(senderA, &sp[1], later); ok {
		t.Fatal("completed")
	}
	s := r.Stats()
	if s.Expired != 2 || s.Pending != 2 || s.Completed != 0 {
		t.Fatalf("after Add at the second timeout: Stats() = %+v, want 2 expired, 2 pending", s)
	}
	r.Expire(later.Add(timeout))
	if s := r.Stats(); s.Expired != 4 || s.Pending != 0 || s.PendingBytes != 0 {
		t.Fatalf("all expired: Stats() = %+v", s)
	}
}

func TestReassembleDefaultTimeout(t *testing.T) {
	ps := packets(t, bigMsg(1, 2000, 0), wire.MinDatagram)
	r := wire.NewReassembler(wire.ReassemblyConfig{Timeout: -time.Second})
	r.Add(senderA, &ps[0], t0)
	r.Expire(t0.Add(wire.DefaultReassemblyTimeout - time.Nanosecond))
	if s := r.Stats(); s.Pending != 1 {
		t.Fatalf("Stats() = %+v, want 1 pending", s)
	}
	r.Expire(t0.Add(wire.DefaultReassemblyTimeout))
	if s := r.Stats(); s.Pending != 0 || s.Expired != 1 {
		t.Fatalf("Stats() = %+v, want 1 expired", s)
	}
}

func TestReassembleLimits(t *testing.T) {
	tests := []struct {
		name        string
		cfg         wire.ReassemblyConfig
		sizes       []int // value lengths of the messages started, in order
		wantEvicted []int // messages gone when all have started
	}{
		{"MaxMessages 2 of 3", wire.ReassemblyConfig{MaxMessages: 2}, []int{2000, 2000, 2000}, []int{0}},
		{"MaxMessages 1 of 3", wire.ReassemblyConfig{MaxMessages: 1}, []int{2000, 2000, 2000}, []int{0, 1}},
		{"MaxMessages 3 of 3", wire.ReassemblyConfig{MaxMessages: 3}, []int{2000, 2000, 2000}, nil},
		{"MaxBytes for 2 of 3", wire.ReassemblyConfig{MaxBytes: 5000}, []int{2000, 2000, 2000}, []int{0}},
		{"MaxBytes exactly full", wire.ReassemblyConfig{MaxBytes: 6000}, []int{2000, 2000, 2000}, nil},
		{"MaxBytes: a large message evicts two", wire.ReassemblyConfig{MaxBytes: 6000}, []int{2000, 2000, 2000, 3500}, []int{0, 1}},
		{"MaxBytes: a small one after a large one", wire.ReassemblyConfig{MaxBytes: 5000}, []int{4000, 1000, 1000}, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := wire.NewReassembler(tc.cfg)
			ps := make([][]wire.Packet, len(tc.sizes))
			var wantBytes int64
			for i, n := range tc.sizes {
				ps[i] = packets(t, bigMsg(uint64(i+1), n, byte(i)), wire.MinDatagram)
				if _, ok := r.Add(senderA, &ps[i][0], t0.Add(time.Duration(i)*time.Millisecond)); ok {
					t.Fatal("completed")
				}
				if !slices.Contains(tc.wantEvicted, i) {
					wantBytes += int64(n)
				}
			}
			s := r.Stats()
			want := wire.ReassemblyStats{
				Evicted:      uint64(len(tc.wantEvicted)),
				Pending:      len(tc.sizes) - len(tc.wantEvicted),
				PendingBytes: wantBytes,
			}
			if s != want {
				t.Fatalf("Stats() = %+v, want %+v", s, want)
			}
			// The survivors complete; the evicted cannot, as their first
			// fragment is gone. Finish survivors first so that restarted
			// evicted messages do not evict them.
			now := t0.Add(time.Second)
			for i := range tc.sizes {
				if slices.Contains(tc.wantEvicted, i) {
					continue
				}
				var ok bool
				for j := 1; j < len(ps[i]); j++ {
					_, ok = r.Add(senderA, &ps[i][j], now)
				}
				if !ok {
					t.Errorf("message %d did not complete", i)
				}
			}
			for _, i := range tc.wantEvicted {
				for j := 1; j < len(ps[i]); j++ {
					if _, ok := r.Add(senderA, &ps[i][j], now); ok {
						t.Errorf("evicted message %d completed", i)
					}
				}
			}
		})
	}
}

// TestReassembleMaxBytesOversized checks MaxBytes against a message that
// alone exceeds it: the Reassembler must not hold more than MaxBytes.
func TestReassembleMaxBytesOversized(t *testing.T) {
	const maxBytes = 4096
	r := wire.NewReassembler(wire.ReassemblyConfig{MaxBytes: maxBytes})
	small := packets(t, bigMsg(1, 2000, 0), wire.MinDatagram)
	r.Add(senderA, &small[0], t0)
	big := packets(t, bigMsg(2, 10000, 0), wire.MinDatagram)
	r.Add(senderA, &big[0], t0)
	if s := r.Stats(); s.PendingBytes > maxBytes {
		t.Errorf("Stats() = %+v: PendingBytes over MaxBytes %d", s, maxBytes)
	}
}

func TestReassembleStatsPending(t *testing.T) {
	a, b := packets(t, bigMsg(1, 3000, 0), wire.MinDatagram), packets(t, bigMsg(2, 2000, 0), wire.MinDatagram)
	r := wire.NewReassembler(wire.ReassemblyConfig{})
	steps := []struct {
		name string
		add  func()
		want wire.ReassemblyStats
	}{
		{"empty", func() {}, wire.ReassemblyStats{}},
		{"first of a", func() { r.Add(senderA, &a[0], t0) }, wire.ReassemblyStats{Pending: 1, PendingBytes: 3000}},
		{"first of b", func() { r.Add(senderA, &b[0], t0) }, wire.ReassemblyStats{Pending: 2, PendingBytes: 5000}},
		{"second of a", func() { r.Add(senderA, &a[1], t0) }, wire.ReassemblyStats{Pending: 2, PendingBytes: 5000}},
		{"rest of a", func() {
			for i := 2; i < len(a); i++ {
				r.Add(senderA, &a[i], t0)
			}
		}, wire.ReassemblyStats{Completed: 1, Pending: 1, PendingBytes: 2000}},
		{"rest of b", func() {
			for i := 1; i < len(b); i++ {
				r.Add(senderA, &b[i], t0)
			}
		}, wire.ReassemblyStats{Completed: 2}},
	}
	for _, st := range steps {
		st.add()
		if s := r.Stats(); s != st.want {
			t.Fatalf("after %s: Stats() = %+v, want %+v", st.name, s, st.want)
		}
	}
}

// TestReassembleConcurrent feeds the fragments of many messages from many
// goroutines; run with -race.
func TestReassembleConcurrent(t *testing.T) {
	const senders, perSender = 8, 10
	type stream struct {
		src netip.AddrPort
		ms  []*wire.Message
		ps  [][]wire.Packet
	}
	streams := make([]stream, senders)
	for s := range streams {
		rng := rand.New(rand.NewPCG(uint64(s), 0))
		st := &streams[s]
		st.src = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(s)}), 7000)
		for i := range perSender {
			m := bigMsg(uint64(i), 1000+rng.IntN(3000), byte(s))
			ps := packets(t, m, wire.MinDatagram)
			rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
			st.ms, st.ps = append(st.ms, m), append(st.ps, ps)
		}
	}
	r := wire.NewReassembler(wire.ReassemblyConfig{})
	var wg sync.WaitGroup
	errs := make(chan error, senders*perSender)
	for s, st := range streams {
		wg.Go(func() {
			for i, m := range st.ms {
				var got *wire.Message
				for j := range st.ps[i] {
					if out, ok := r.Add(st.src, &st.ps[i][j], t0); ok {
						got = &out
					}
				}
				if got == nil || !bytes.Equal(got.Value, m.Value) {
					errs <- fmt.Errorf("sender %d message %d not reassembled", s, i)
				}
				_ = r.Stats()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := r.Stats(); s != (wire.ReassemblyStats{Completed: senders * perSender}) {
		t.Errorf("Stats() = %+v", s)
	}
}
