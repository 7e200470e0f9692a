package clientleaf_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/clientleaf"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/softswitch"
)

// startRunner runs a client leaf runner for target until the test ends.
func startRunner(t *testing.T, target *switchtest.Target) *clientleaf.Runner {
	t.Helper()
	r := clientleaf.NewRunner(clientleaf.RunnerConfig{
		Name: "leaf-0", Leader: true,
		Dial: func(ctx context.Context) (clientleaf.Session, error) {
			return stratum.Dial(ctx, stratum.Config{Address: target.P4Runtime, DeviceID: 1, Logger: quiet})
		},
		Controller: clientleaf.Config{Addr: target.Addr(), Info: p4info(t, softswitch.ClientLeafProgram).P4Info},
		Retry:      20 * time.Millisecond, Logger: quiet,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() { r.Run(ctx); close(done) }()
	return r
}

// switchTables reads the leaf's table entries straight from the software
// switch (no session needed).
func switchTables(t *testing.T, target *switchtest.Target) []*p4v1.Entity {
	t.Helper()
	es, err := target.Switch().Read([]*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{}}}})
	if err != nil {
		return nil // no pipeline yet
	}
	var out []*p4v1.Entity
	for _, e := range es {
		if !e.GetTableEntry().IsDefaultAction {
			out = append(out, e)
		}
	}
	return out
}

// routesOf says whether the leaf's entries route every key of a sample as
// p does: to its Active spine and its rack's Active storage leaf.
func routesOf(t *testing.T, es []*p4v1.Entity, p *partmap.Placement) error {
	t.Helper()
	if len(es) == 0 {
		return errors.New("no entries")
	}
	m := p.Map()
	for i := range 500 {
		key := fmt.Sprintf("key-%d", i)
		spine, leaf := route(t, es, key, p.ShardIndex(key))
		var want [2]uint64
		for _, c := range p.Owners(key, nil) {
			if !c.Fenced && m.Layers[c.Layer].Members[c.Member].State == partmap.Active {
				want[c.Layer] = uint64(c.Node)
			}
		}
		if r, _ := p.Shard(key); p.RackMember(1, r) < 0 {
			want[1] = 0
		}
		if spine != want[0] || leaf != want[1] {
			return fmt.Errorf("%s: the leaf routes to spine %d, leaf %d; the map to %v", key, spine, leaf, want)
		}
	}
	return nil
}

// TestRunnerProgramsTheLeaf: a runner pushes the client leaf program,
// applies the map it was given before it had a session, applies every
// later map, and after the leaf restarts (empty, without a pipeline)
// programs it again with the newest map, without waiting for another.
func TestRunnerProgramsTheLeaf(t *testing.T) {
	target := switchtest.StartClientLeaf(t, 4, 1)
	r := clientleaf.NewRunner(clientleaf.RunnerConfig{Name: "leaf-0", Leader: true, Dial: func(context.Context) (clientleaf.Session, error) {
		return nil, errors.New("not used")
	}})
	m := switchMap(t)
	all := compile(t, m)
	if err := r.Renew(context.Background(), all, time.Now()); !errors.Is(err, cacheswitch.ErrNoSession) {
		t.Fatalf("Renew without a session: %v, want ErrNoSession", err)
	}

	r = startRunner(t, target)
	if err := r.Renew(context.Background(), all, time.Now()); err != nil && !errors.Is(err, cacheswitch.ErrNoSession) {
		t.Fatal(err)
	}
	<-r.Programmed()
	poll.Eventually(t, "the leaf routes by the map given before its session", func() (bool, error) {
		err := routesOf(t, switchTables(t, target), all)
		return err == nil, err
	})

	fenced := compile(t, withState(t, m, m.Layers[0].Members[0].Name, partmap.Fenced))
	if err := r.Renew(context.Background(), fenced, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := routesOf(t, switchTables(t, target), fenced); err != nil {
		t.Fatalf("after Renew with spine 0 fenced: %v", err)
	}

	if err := target.Restart(); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, "the restarted leaf programmed with the newest map", func() (bool, error) {
		err := routesOf(t, switchTables(t, target), fenced)
		return r.State().Sessions == 2 && r.State().Programmed && err == nil, err
	})
	st := r.Stats()
	if st.Applies.Load() < 3 || st.Errors.Load() != 0 || st.Written.Load() == 0 {
		t.Errorf("stats: %d applies, %d errors, %d entries written", st.Applies.Load(), st.Errors.Load(), st.Written.Load())
	}
}

// TestRunnerRefusedPipeline: a switch running the cache switch program
// refuses the client leaf's pipeline; the runner reports it, and is not
// programmed.
func TestRunnerRefusedPipeline(t *testing.T) {
	target := switchtest.StartTarget(t, 4, 1)
	r := startRunner(t, target)
	poll.Until(t, "the pipeline refused", func() bool { return errors.Is(r.State().Err, stratum.ErrPipelineRejected) })
	if st := r.State(); st.Programmed || st.Sessions != 0 {
		t.Fatalf("state %+v", st)
	}
}
