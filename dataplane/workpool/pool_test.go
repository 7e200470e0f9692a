package workpool

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestEveryTaskRunsOnce runs many tasks at once, some from inside others.
func TestEveryTaskRunsOnce(t *testing.T) {
	p := New(8)
	const n = 2000
	var ran [n]atomic.Int32
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n / 2 {
		if !p.Go(func() {
			ran[i].Add(1)
			p.Go(func() { ran[n/2+i].Add(1); wg.Done() })
			wg.Done()
		}) {
			t.Fatal("Go refused a task before Close")
		}
	}
	wg.Wait()
	p.Close()
	for i := range ran {
		if got := ran[i].Load(); got != 1 {
			t.Fatalf("task %d ran %d times", i, got)
		}
	}
}

// TestWorkersAreReused runs tasks one after another: workers that finished
// take the next ones instead of a goroutine each.
func TestWorkersAreReused(t *testing.T) {
	p := New(0)
	defer p.Close()
	const n = 1000
	for range n {
		done := make(chan struct{})
		p.Go(func() { close(done) })
		<-done
	}
	if s := p.Stats(); s.Started >= n/2 {
		t.Errorf("%d tasks one after another started %d workers", n, s.Started)
	}
}

// TestIdleWorkersAreBounded releases a burst of blocked tasks: what stays
// is at most maxIdle workers.
func TestIdleWorkersAreBounded(t *testing.T) {
	const maxIdle, n = 4, 64
	p := New(maxIdle)
	defer p.Close()
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		p.Go(func() { started.Done(); <-release })
	}
	started.Wait()
	if s := p.Stats(); s.Started != n || s.Alive != n {
		t.Fatalf("%d blocked tasks: %+v, want as many workers", n, s)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := p.Stats()
		if s.Alive == s.Idle { // every worker left is waiting
			if s.Idle > maxIdle {
				t.Fatalf("after the burst %d workers wait, want at most %d", s.Idle, maxIdle)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers did not settle: %+v", s)
		}
		runtime.Gosched()
	}
}

// TestCloseWaitsAndRefuses checks that Close waits for a running task and
// that Go refuses tasks afterwards.
func TestCloseWaitsAndRefuses(t *testing.T) {
	p := New(0)
	running, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	p.Go(func() { close(running); <-release; finished.Store(true) })
	<-running
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	close(release)
	<-closed
	if !finished.Load() {
		t.Error("Close returned before the running task ended")
	}
	if p.Go(func() { t.Error("a task ran after Close") }) {
		t.Error("Go accepted a task after Close")
	}
	if s := p.Stats(); s.Alive != 0 {
		t.Errorf("after Close %d workers are alive", s.Alive)
	}
}
