package transport

import (
	"testing"
	"time"
)

func TestRetransmitBackoff(t *testing.T) {
	cfg := Config{}.withDefaults()
	ms := time.Millisecond
	want := []time.Duration{50 * ms, 100 * ms, 200 * ms, 400 * ms, 800 * ms, 800 * ms, 800 * ms}
	got := []time.Duration{cfg.Retransmit}
	for len(got) < len(want) {
		got = append(got, nextRetransmit(got[len(got)-1], cfg.MaxRetransmit))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("intervals %v, want %v", got, want)
		}
	}
}

func TestMaxRetransmitDefaults(t *testing.T) {
	tests := []struct {
		name           string
		cfg            Config
		first, ceiling time.Duration
	}{
		{"defaults", Config{}, DefaultRetransmit, DefaultMaxRetransmit},
		{"short first interval", Config{Retransmit: time.Millisecond}, time.Millisecond, DefaultMaxRetransmit},
		{"first interval above the default ceiling", Config{Retransmit: 2 * time.Second}, 2 * time.Second, 2 * time.Second},
		{"explicit ceiling", Config{Retransmit: 10 * time.Millisecond, MaxRetransmit: 40 * time.Millisecond}, 10 * time.Millisecond, 40 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg.withDefaults()
			if c.Retransmit != tc.first || c.MaxRetransmit != tc.ceiling {
				t.Fatalf("Retransmit %v, MaxRetransmit %v; want %v, %v", c.Retransmit, c.MaxRetransmit, tc.first, tc.ceiling)
			}
		})
	}
}
