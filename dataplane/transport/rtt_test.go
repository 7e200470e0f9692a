package transport

import (
	"net/netip"
	"testing"
	"time"
)

// The estimator follows RFC 6298: the first sample sets srtt and half of
// it as rttvar; later ones move them by 1/8 and 1/4.
func TestRTTSamples(t *testing.T) {
	a := netip.MustParseAddrPort("127.0.0.1:1")
	var r rtts
	if _, _, ok := r.get(a); ok {
		t.Fatal("an estimate before any sample")
	}
	for _, tc := range []struct {
		sample, srtt, rttvar time.Duration
	}{
		{80 * time.Millisecond, 80 * time.Millisecond, 40 * time.Millisecond},
		{160 * time.Millisecond, 90 * time.Millisecond, 50 * time.Millisecond},
		{90 * time.Millisecond, 90 * time.Millisecond, 37500 * time.Microsecond},
	} {
		r.sample(a, tc.sample)
		srtt, rttvar, ok := r.get(a)
		if !ok || srtt != tc.srtt || rttvar != tc.rttvar {
			t.Fatalf("after %v: srtt %v rttvar %v, want %v %v", tc.sample, srtt, rttvar, tc.srtt, tc.rttvar)
		}
	}
	r.sample(a, -time.Millisecond) // a clock step: ignored
	if srtt, _, _ := r.get(a); srtt != 90*time.Millisecond {
		t.Fatalf("a negative sample moved srtt to %v", srtt)
	}
}

// The first retransmission waits srtt + 4·rttvar within [Retransmit,
// MaxRetransmit]: a fast peer keeps Retransmit, a slow one gets longer.
func TestFirstRetransmit(t *testing.T) {
	fast := netip.MustParseAddrPort("127.0.0.1:1")
	slow := netip.MustParseAddrPort("127.0.0.1:2")
	stuck := netip.MustParseAddrPort("127.0.0.1:3")
	e := &Endpoint{cfg: Config{Retransmit: 50 * time.Millisecond, MaxRetransmit: 800 * time.Millisecond}}
	e.rtt.sample(fast, 200*time.Microsecond)
	e.rtt.sample(slow, 60*time.Millisecond)
	e.rtt.sample(stuck, 2*time.Second)
	for _, tc := range []struct {
		dst  netip.AddrPort
		want time.Duration
	}{
		{netip.MustParseAddrPort("127.0.0.1:4"), 50 * time.Millisecond}, // no sample yet
		{fast, 50 * time.Millisecond},
		{slow, 180 * time.Millisecond},
		{stuck, 800 * time.Millisecond},
	} {
		if got := e.firstRetransmit(tc.dst); got != tc.want {
			t.Errorf("firstRetransmit(%v) = %v, want %v", tc.dst, got, tc.want)
		}
	}
	reqs := []Request{{Dst: fast}, {Dst: fast}, {Dst: slow}}
	if got := e.batchRetransmit(reqs); got != 180*time.Millisecond {
		t.Errorf("batchRetransmit = %v, want the slowest peer's 180ms", got)
	}
}
