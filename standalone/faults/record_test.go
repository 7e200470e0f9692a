package faults

import (
	"errors"
	"testing"
	"time"
)

// TestRecorder checks what a recorder keeps of faults that end, fail to
// heal, fail to start and are still open.
func TestRecorder(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0
	r := NewRecorder(func() time.Time { return now })
	endPause := r.Begin("pause-node", "SIGSTOP", "fault-spine-0")
	now = now.Add(time.Second)
	endDelay := r.Begin("delay", "150ms", "udp 1->2")
	now = now.Add(2 * time.Second)
	endPause(nil)
	r.Fail("kill-shim", "SIGKILL", errors.New("no pid"), "fault-rack-0-0")
	if open := r.Open(); len(open) != 1 || open[0].Kind != "delay" {
		t.Fatalf("open faults %+v, want the delay", open)
	}
	now = now.Add(time.Second)
	endDelay(errors.New("cannot remove"))

	want := []struct {
		kind string
		dur  time.Duration
		err  string
	}{{"pause-node", 3 * time.Second, ""}, {"delay", 3 * time.Second, "cannot remove"}, {"kill-shim", 0, "no pid"}}
	got := r.Records()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Kind != w.kind || got[i].Duration() != w.dur || got[i].Err != w.err {
			t.Errorf("record %d = %+v (duration %v), want %s lasting %v with error %q", i, got[i], got[i].Duration(), w.kind, w.dur, w.err)
		}
	}
	if got[0].Targets[0] != "fault-spine-0" || !got[0].Start.Equal(t0) {
		t.Errorf("first record %+v: want fault-spine-0 from %v", got[0], t0)
	}
	if len(r.Open()) != 0 {
		t.Errorf("open faults left: %+v", r.Open())
	}
}
