package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/workload"
)

// workloadConfig is a bounded Zipf workload with writes.
type workloadConfig struct {
	keys       int
	skew       float64
	workers    int
	opsPerWork int     // operations per worker: the bound on the load
	writeRatio float64 // share of puts (and 1/10 of that again as deletes)
	clients    int
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
func preload(t *testing.T, h *history, cl *client.Client, keys int) {
	t.Helper()
	for id := range uint64(keys) {
		k := keyName(id)
		v := "init-" + k
		call := h.now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.Put(ctx, k, []byte(v))
		cancel()
		if err != nil {
			t.Fatalf("cannot preload %s: %v", k, err)
		}
		h.add(0, kvInput{op: "put", key: k, value: v}, kvOutput{}, call, h.now())
	}
}

// run drives the workload and records every operation in h.
func run(t *testing.T, c *cluster, h *history, cfg workloadConfig) *tally {
	t.Helper()
	return start(t, c, h, cfg)()
}

// start starts the workload on new clients and returns a function that
// waits for it to end. Only the returned function may be called from
// another goroutine than the test's.
func start(t *testing.T, c *cluster, h *history, cfg workloadConfig) func() *tally {
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
					write(h, &tl, cl, w+1, kvInput{op: "del", key: k})
				case r < cfg.writeRatio:
					write(h, &tl, cl, w+1, kvInput{op: "put", key: k, value: fmt.Sprintf("w%d-%d", w, n)})
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
func readBack(t *testing.T, h *history, cl *client.Client, keys int) {
	t.Helper()
	var tl tally
	for id := range uint64(keys) {
		read(h, &tl, cl, 0, keyName(id), false)
	}
	if n := tl.failedReads.Load(); n > 0 {
		t.Fatalf("%d of %d final reads failed", n, keys)
	}
}

func write(h *history, tl *tally, cl *client.Client, worker int, in kvInput) {
	tl.puts.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	call := h.now()
	var err error
	if in.op == "put" {
		err = cl.Put(ctx, in.key, []byte(in.value))
	} else {
		err = cl.Delete(ctx, in.key)
	}
	ret := h.now()
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
		ret = unknown
	}
	h.add(worker, in, kvOutput{}, call, ret)
}

func read(h *history, tl *tally, cl *client.Client, worker int, key string, hottest bool) {
	tl.gets.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	call := h.now()
	res, err := cl.GetResult(ctx, key)
	ret := h.now()
	out := kvOutput{value: string(res.Value), found: true}
	switch {
	case err == nil:
	case errors.Is(err, client.ErrNotFound):
		out = kvOutput{}
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
	h.add(worker, kvInput{op: "get", key: key}, out, call, ret)
}

// checkLinearizable fails the test unless h is linearizable per key; on
// failure it writes porcupine's visualization next to the test output.
func checkLinearizable(t *testing.T, h *history) {
	t.Helper()
	ops := withoutUnobservedUnknownPuts(h.operations())
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(kvModel, ops, 2*time.Minute)
	switch res {
	case porcupine.Ok:
		t.Logf("history of %d operations is linearizable (checked in %v)", len(ops), time.Since(start).Round(time.Millisecond))
	case porcupine.Unknown:
		t.Fatalf("linearizability check of %d operations timed out", len(ops))
	default:
		if f, err := os.CreateTemp("", "distcache-e2e-*.html"); err == nil {
			_ = f.Close()
			if err := porcupine.VisualizePath(kvModel, info, f.Name()); err == nil {
				t.Logf("visualization: %s", f.Name())
			}
		}
		logFailingKey(t, ops)
		t.Fatalf("history of %d operations is NOT linearizable", len(ops))
	}
}

// logFailingKey logs the operations of the first key whose own history is
// not linearizable, in call order.
func logFailingKey(t *testing.T, ops []porcupine.Operation) {
	t.Helper()
	for _, part := range kvModel.Partition(ops) {
		if porcupine.CheckOperations(kvModel, part) {
			continue
		}
		sort.Slice(part, func(i, j int) bool { return part[i].Call < part[j].Call })
		// The shortest failing prefix (by call time) ends at the culprit.
		n := sort.Search(len(part), func(n int) bool { return !porcupine.CheckOperations(kvModel, part[:n+1]) }) + 1
		t.Logf("key %s: %d operations; the first %d are not linearizable, the last of them:", part[0].Input.(kvInput).key, len(part), n)
		for _, op := range part[max(0, n-40):n] {
			ret := "unknown"
			if op.Return != unknown {
				ret = time.Duration(op.Return).String()
			}
			t.Logf("  client %2d [%v, %s] %s", op.ClientId, time.Duration(op.Call), ret, kvModel.DescribeOperation(op.Input, op.Output))
		}
		return
	}
}

// withoutUnobservedUnknownPuts drops the puts whose outcome is unknown and
// whose value no read returned. This keeps the check exact and fast: such a
// put can always be linearized after every other operation (its interval
// never closes), where it changes nothing any read saw, so a history is
// linearizable with it iff it is without it. (Values are unique per put;
// deletes carry no value and are kept.)
func withoutUnobservedUnknownPuts(ops []porcupine.Operation) []porcupine.Operation {
	seen := map[string]bool{}
	for _, op := range ops {
		if in := op.Input.(kvInput); in.op == "get" {
			if out := op.Output.(kvOutput); out.found {
				seen[in.key+"\x00"+out.value] = true
			}
		}
	}
	kept := ops[:0]
	for _, op := range ops {
		in := op.Input.(kvInput)
		if op.Return == unknown && in.op == "put" && !seen[in.key+"\x00"+in.value] {
			continue
		}
		kept = append(kept, op)
	}
	return kept
}
