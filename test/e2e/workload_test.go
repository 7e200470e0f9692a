package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/workload"
	"github.com/distcache/distcache/workload/history"
)

// workloadConfig is a bounded Zipf workload with writes.
type workloadConfig struct {
	keys       int
	skew       float64
	workers    int
	opsPerWork int     // operations per worker: the bound on the load
	writeRatio float64 // share of puts (and 1/10 of that again as deletes)
	clients    int
	// writeTimeout bounds one write (default 5s).
	writeTimeout time.Duration
	// onOp, when set, runs on the worker after every completed operation
	// with the total count so far and the outcomes; tests use it to change
	// the cluster mid-run or to signal the test goroutine.
	onOp func(n int64, tl *tally)
}

// tally counts outcomes of a run.
type tally struct {
	gets, hits, puts, failedWrites, unknownWrites, failedReads atomic.Int64
	timeouts                                                   atomic.Int64 // writes whose outcome is unknown because no reply came
	hotHits, hotGets                                           atomic.Int64
}

// keyName is the name of workload key id.
func keyName(id uint64) string { return workload.Key(id) }

// preload writes every key once (recorded, so the history starts from
// known values).
func preload(t *testing.T, h *history.Recorder, cl *client.Client, keys int) {
	t.Helper()
	for id := range uint64(keys) {
		k := keyName(id)
		v := "init-" + k
		call := h.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.Put(ctx, k, []byte(v))
		cancel()
		if err != nil {
			t.Fatalf("cannot preload %s: %v", k, err)
		}
		h.Add(history.Operation{Client: 0, Kind: history.Put, Key: k, Value: v, Call: call, Return: h.Now()})
	}
}

// preloaded is a history that starts with keys written once through a
// new client of c (preload).
func preloaded(t *testing.T, c *cluster, keys int) *history.Recorder {
	t.Helper()
	h := history.NewRecorder()
	preload(t, h, c.newClient(), keys)
	return h
}

// ops is the number of operations the workload runs: its bound.
func (cfg workloadConfig) ops() int64 { return int64(cfg.workers * cfg.opsPerWork) }

// run drives the workload and records every operation in h.
func run(t *testing.T, c *cluster, h *history.Recorder, cfg workloadConfig) *tally {
	t.Helper()
	return start(t, c, h, cfg)()
}

// start starts the workload on new clients and returns a function that
// waits for it to end. Only the returned function may be called from
// another goroutine than the test's.
func start(t *testing.T, c *cluster, h *history.Recorder, cfg workloadConfig) func() *tally {
	t.Helper()
	zipf, err := workload.NewZipf(uint64(cfg.keys), cfg.skew)
	if err != nil {
		t.Fatal(err)
	}
	clients := make([]*client.Client, cfg.clients)
	for i := range clients {
		clients[i] = c.newClient()
	}
	var (
		tl    tally
		total atomic.Int64
		wg    sync.WaitGroup
	)
	deadline := time.Now().Add(2 * time.Minute)
	for w := range cfg.workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			cl := clients[w%len(clients)]
			for n := 0; n < cfg.opsPerWork && time.Now().Before(deadline); n++ {
				id := zipf.Sample(rng)
				k := keyName(id)
				r := rng.Float64()
				switch {
				case r < cfg.writeRatio/10:
					write(h, &tl, cl, cfg.writeTimeout, history.Operation{Client: w + 1, Kind: history.Delete, Key: k})
				case r < cfg.writeRatio:
					write(h, &tl, cl, cfg.writeTimeout, history.Operation{Client: w + 1, Kind: history.Put, Key: k, Value: fmt.Sprintf("w%d-%d", w, n)})
				default:
					read(h, &tl, cl, w+1, k, id == 0)
				}
				if cfg.onOp != nil {
					cfg.onOp(total.Add(1), &tl)
				}
			}
		})
	}
	return func() *tally {
		wg.Wait()
		return &tl
	}
}

// readBack reads every key once more after the workload, recorded in h:
// with the history it proves that no acknowledged write was lost.
func readBack(t *testing.T, h *history.Recorder, cl *client.Client, keys int) {
	t.Helper()
	var tl tally
	for id := range uint64(keys) {
		read(h, &tl, cl, 0, keyName(id), false)
	}
	if n := tl.failedReads.Load(); n > 0 {
		t.Fatalf("%d of %d final reads failed", n, keys)
	}
}

// write runs op (a put or delete without its times) within timeout (5s
// when zero) and records it.
func write(h *history.Recorder, tl *tally, cl *client.Client, timeout time.Duration, op history.Operation) {
	tl.puts.Add(1)
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	op.Call = h.Now()
	var err error
	if op.Kind == history.Put {
		err = cl.Put(ctx, op.Key, []byte(op.Value))
	} else {
		err = cl.Delete(ctx, op.Key)
	}
	op.Return = h.Now()
	switch {
	case err == nil:
	case errors.Is(err, client.ErrCoherence):
		// The shim guarantees nothing was written: not an operation.
		tl.failedWrites.Add(1)
		return
	default:
		// Storage errors and timeouts may or may not have taken effect.
		tl.unknownWrites.Add(1)
		if errors.Is(err, client.ErrOutcomeUnknown) {
			tl.timeouts.Add(1)
		}
		op.Return = history.Unknown
	}
	h.Add(op)
}

func read(h *history.Recorder, tl *tally, cl *client.Client, worker int, key string, hottest bool) {
	tl.gets.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	op := history.Operation{Client: worker, Kind: history.Get, Key: key, Call: h.Now()}
	res, err := cl.GetResult(ctx, key)
	op.Return = h.Now()
	switch {
	case err == nil:
		op.Value, op.Found = string(res.Value), true
	case errors.Is(err, client.ErrNotFound):
	default:
		tl.failedReads.Add(1) // observed nothing
		return
	}
	if res.Hit {
		tl.hits.Add(1)
	}
	if hottest {
		tl.hotGets.Add(1)
		if res.Hit {
			tl.hotHits.Add(1)
		}
	}
	h.Add(op)
}

// checkLinearizable fails the test unless h is linearizable per key; on
// failure it writes porcupine's visualization of each failing key next to
// the test output and logs the end of its shortest failing history.
func checkLinearizable(t *testing.T, h *history.Recorder) {
	t.Helper()
	res := history.Check(h.Operations(), 2*time.Minute)
	switch {
	case len(res.Violations) > 0:
		for i := range res.Violations {
			logViolation(t, &res.Violations[i])
		}
		t.Fatalf("history of %d operations is NOT linearizable (%d of %d keys)", res.Operations, len(res.Violations), res.Keys)
	case len(res.Unchecked) > 0:
		t.Fatalf("linearizability check of %d operations timed out (%d of %d keys unchecked)", res.Operations, len(res.Unchecked), res.Keys)
	}
	t.Logf("history of %d operations is linearizable (checked in %v)", res.Operations, res.Elapsed.Round(time.Millisecond))
}

// logViolation writes v's visualization to a temporary file and logs the
// last operations of its shortest failing prefix, in call order.
func logViolation(t *testing.T, v *history.Violation) {
	t.Helper()
	if f, err := os.CreateTemp("", "distcache-e2e-*.html"); err == nil {
		_ = f.Close()
		if err := v.WriteVisualization(f.Name()); err == nil {
			t.Logf("visualization: %s", f.Name())
		}
	}
	t.Logf("key %s: %d operations; the first %d are not linearizable, the last of them:", v.Key, v.Operations, v.PrefixLength)
	for _, op := range v.Tail {
		t.Logf("  %s", op)
	}
}
