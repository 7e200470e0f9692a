package standalone

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/standalone/plan"
)

func TestSpreadChecksEveryProcessAndSkipsAHungOne(t *testing.T) {
	procs := []plan.Process{{Name: "hung"}, {Name: "a"}, {Name: "b"}}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu     sync.Mutex // guards counts
		counts = map[string]int{}
		done   = make(chan struct{}) // closed when a and b were checked three times
		closed bool
	)
	release := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		spread(ctx, 3*time.Millisecond, procs, func(_ context.Context, pr plan.Process) {
			mu.Lock()
			counts[pr.Name]++
			if !closed && counts["a"] >= 3 && counts["b"] >= 3 {
				closed = true
				close(done)
			}
			mu.Unlock()
			if pr.Name == "hung" {
				<-release
			}
		})
	}()
	<-done
	mu.Lock()
	if counts["hung"] != 1 {
		t.Errorf("the hung process was checked %d times while its first check ran, want 1", counts["hung"])
	}
	mu.Unlock()
	close(release)
	cancel()
	<-finished // spread waits for the checks it started
}

func TestSpreadWithoutProcessesReturnsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spread(ctx, time.Second, nil, func(context.Context, plan.Process) { t.Error("checked a process of none") })
}
