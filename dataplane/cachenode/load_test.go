package cachenode

import (
	"testing"
	"time"
)

// The load in a reply counts every GET at once, whether or not the tally
// has reached the meter yet, and decays once the GETs stop.
func TestLoadCountsTalliedGets(t *testing.T) {
	const window = 100 * time.Millisecond
	tests := []struct {
		name     string
		gets     int
		spacing  time.Duration // between GETs
		readAt   time.Duration // after the last GET
		min, max uint32
	}{
		{"fewer than a batch, at once", loadBatch / 2, 0, 0, loadBatch / 2, loadBatch / 2},
		{"several batches, at once", 5*loadBatch + 3, 0, 0, 5*loadBatch + 3, 5*loadBatch + 3},
		{"spread over periods", 100, 100 * time.Microsecond, 0, 90, 100},
		{"ten windows later", 100, 0, 10 * window, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.LoadWindow = window
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close() })
			now := int64(time.Second)
			for i := range tc.gets {
				if i > 0 {
					now += int64(tc.spacing)
				}
				n.countGet(now)
			}
			if got := n.loadAt(now + int64(tc.readAt)); got < tc.min || got > tc.max {
				t.Fatalf("load = %d, want %d…%d", got, tc.min, tc.max)
			}
		})
	}
}
