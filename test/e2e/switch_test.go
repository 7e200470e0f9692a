package e2e

import (
	"sync"
	"testing"

	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
)

// TestLinearizableWithSwitchSpine runs the standard workload on a cluster
// whose spine layer is two software switches, programmed over P4Runtime
// by their controllers: hot keys are inserted by the switches' digests
// and filled by FETCH_REPLY packets, kept coherent by the shims'
// INVALIDATE and UPDATE packets, misses relayed to the shims; the history
// is linearizable and the switches served hits.
func TestLinearizableWithSwitchSpine(t *testing.T) {
	c := newCluster(t, withSwitchSpine())
	h := preloaded(t, c, 200)
	tl := run(t, c, h, standard())
	t.Logf("%s: %d gets (%d hits, %d at the switches), %d writes (%d refused, %d unknown), %d failed reads",
		c, tl.gets.Load(), tl.hits.Load(), c.switchHits(), tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load(), tl.failedReads.Load())
	checkLinearizable(t, h)
	if c.switchHits() == 0 {
		t.Fatal("the switches served no hit")
	}
}

// TestLinearizableWithSwitchSpineAuthenticated: the same with a
// data-plane key: the shims sign their messages to nodes and clients and
// exchange the switches' coherence messages unsigned (a switch cannot
// compute the MAC); nothing of the cluster's own is rejected.
func TestLinearizableWithSwitchSpineAuthenticated(t *testing.T) {
	c := newCluster(t, withSwitchSpine(), withDataPlaneKey(t))
	h := preloaded(t, c, 200)
	tl := run(t, c, h, standard())
	t.Logf("%s: %d gets (%d hits, %d at the switches), %d writes", c, tl.gets.Load(), tl.hits.Load(), c.switchHits(), tl.puts.Load())
	checkLinearizable(t, h)
	if c.switchHits() == 0 {
		t.Fatal("the switches served no hit")
	}
	if r := c.macRejected(); r != 0 {
		t.Fatalf("%d datagrams of the cluster's own were rejected for their MAC", r)
	}
}

// TestLinearizableAcrossSwitchRestartAndFailover restarts one switch a
// third into the run — it comes back empty, without a pipeline, and its
// controller programs it again — and marks the other Failed two thirds in
// and Active again at five sixths (its controller drops every key and its
// lease, then takes its share back): the history stays linearizable and
// the switches served hits.
func TestLinearizableAcrossSwitchRestartAndFailover(t *testing.T) {
	c := newCluster(t, withSwitchSpine())
	h := preloaded(t, c, 200)
	cfg := standard()
	total := cfg.ops()
	var (
		mu                          sync.Mutex
		restarted, failed, restored bool
	)
	cfg.onOp = func(n int64, _ *tally) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case n >= total/3 && !restarted:
			restarted = true
			if err := c.Switches()[c.spineMember(0)].Restart(); err != nil {
				t.Error(err)
			}
		case n >= 2*total/3 && !failed:
			failed = true
			if err := c.SetState(c.spineMember(1), partmap.Failed); err != nil {
				t.Error(err)
			}
		case n >= 5*total/6 && !restored:
			restored = true
			if err := c.SetState(c.spineMember(1), partmap.Active); err != nil {
				t.Error(err)
			}
		}
	}
	tl := run(t, c, h, cfg)
	t.Logf("%s: %d gets (%d hits, %d at the switches since the restart), %d writes (%d refused, %d unknown), %d failed reads",
		c, tl.gets.Load(), tl.hits.Load(), c.switchHits(), tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load(), tl.failedReads.Load())
	checkLinearizable(t, h)
	if c.switchHits() == 0 {
		t.Fatal("the switches served no hit")
	}
}

// TestLinearizableAcrossControllerHandover gives every switch a second
// controller, a backup, and stops the first controllers a third into the
// run, as when the operator's leader goes away: the backups take the
// switches over with their caches — no pipeline pushed — and the
// history stays linearizable. The switch copies kept across the handover
// stay coherent because the shims invalidate the switches whoever
// controls them.
func TestLinearizableAcrossControllerHandover(t *testing.T) {
	c := newCluster(t, withSwitchSpine())
	backups := map[string]*switchtest.Controller{}
	installs := map[string]uint64{}
	for name, sw := range c.Switches() {
		backups[name] = sw.StartController(t, name, 2, nil)
	}
	h := preloaded(t, c, 200)
	cfg := standard()
	total := cfg.ops()
	var (
		mu       sync.Mutex
		stopped  bool
		hitsThen uint64
	)
	cfg.onOp = func(n int64, _ *tally) {
		mu.Lock()
		defer mu.Unlock()
		if n < total/3 || stopped {
			return
		}
		stopped, hitsThen = true, c.switchHits()
		for name, sw := range c.Switches() {
			installs[name] = sw.Switch().Stats().PipelineInstalls.Load()
			sw.StopRunner()
		}
	}
	tl := run(t, c, h, cfg)
	t.Logf("%s: %d gets (%d hits, %d at the switches, %d after the handover), %d writes (%d refused, %d unknown), %d failed reads",
		c, tl.gets.Load(), tl.hits.Load(), c.switchHits(), c.switchHits()-hitsThen, tl.puts.Load(), tl.failedWrites.Load(), tl.unknownWrites.Load(), tl.failedReads.Load())
	checkLinearizable(t, h)
	for name, sw := range c.Switches() {
		st := backups[name].Runner.State()
		if !st.Programmed || st.Pushes != 0 || sw.Switch().Stats().PipelineInstalls.Load() != installs[name] {
			t.Errorf("switch %s: backup %+v, %d pipelines installed since the handover: want it primary without a push",
				name, st, sw.Switch().Stats().PipelineInstalls.Load()-installs[name])
		}
	}
	if c.switchHits() == hitsThen {
		t.Fatal("the switches served no hit after the handover")
	}
}
