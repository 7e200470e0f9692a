package driver

import "testing"

func TestParseCPULine(t *testing.T) {
	for _, tc := range []struct {
		line      string
		ok        bool
		idle, all uint64
	}{
		{"cpu  100 5 50 800 20 1 2 3 40 4", true, 820, 981},
		{"cpu 1 2 3 4", true, 4, 10},
		{"cpu0 1 2 3 4 5", false, 0, 0},
		{"cpu 1 x 3 4 5", false, 0, 0},
		{"cpu 1 2", false, 0, 0},
	} {
		got, ok := parseCPULine(tc.line)
		if ok != tc.ok || got.idle != tc.idle || got.total != tc.all {
			t.Errorf("%q: %+v %v, want idle %d total %d %v", tc.line, got, ok, tc.idle, tc.all, tc.ok)
		}
	}
	if s := idleShare(cpuTimes{10, 100}, cpuTimes{40, 200}, true); s != 0.3 {
		t.Errorf("idleShare = %g, want 0.3", s)
	}
	if s := idleShare(cpuTimes{10, 100}, cpuTimes{10, 100}, true); s != -1 {
		t.Errorf("idleShare of no time = %g, want -1", s)
	}
}
