package history

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// simulation is a set of clients running gets, puts and deletes on one
// atomic register: each operation takes effect at an instant within its
// interval, so the history it records is linearizable by construction.
type simulation struct {
	seed    uint64
	clients int
	ops     int
	keys    int
	// slowShare is the share of operations whose latency is slowFactor
	// times the usual, as when a process is descheduled.
	slowShare  float64
	slowFactor float64
}

// simOption edits a simulation built by newSimulation.
type simOption func(*simulation)

// newSimulation builds a simulation of 16 clients running 20,000
// operations on 4 keys, 2% of them 100 times slower than the rest.
func newSimulation(opts ...simOption) simulation {
	s := simulation{seed: 1, clients: 16, ops: 20_000, keys: 4, slowShare: 0.02, slowFactor: 100}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func withSeed(seed uint64) simOption     { return func(s *simulation) { s.seed = seed } }
func withSlow(share float64) simOption   { return func(s *simulation) { s.slowShare = share } }
func withSlowFactor(f float64) simOption { return func(s *simulation) { s.slowFactor = f } }
func withKeys(n int) simOption           { return func(s *simulation) { s.keys = n } }

// pending is an operation called but not yet returned.
type pending struct {
	op       Operation
	effect   int64 // when it takes effect
	returned bool  // whether it took effect
}

// events orders pending operations by their next instant: the effect,
// then the return.
type events []*pending

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	return e[i].next() < e[j].next()
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(*pending)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

func (p *pending) next() int64 {
	if p.returned {
		return p.op.Return
	}
	return p.effect
}

// run returns the history the simulation records.
func (s simulation) run() []Operation {
	rng := rand.New(rand.NewPCG(s.seed, 0))
	latency := func() int64 {
		d := 1000 + rng.Int64N(4000)
		if rng.Float64() < s.slowShare {
			d = int64(float64(d) * s.slowFactor)
		}
		return d
	}
	state := map[string]register{}
	var (
		h      events
		out    []Operation
		called int
	)
	call := func(client int, at int64) {
		if called == s.ops {
			return
		}
		called++
		op := Operation{Client: client, Key: fmt.Sprintf("k%d", rng.IntN(s.keys)), Call: at}
		switch r := rng.Float64(); {
		case r < 0.3:
			op.Kind, op.Value = Put, fmt.Sprintf("v%d", called)
		case r < 0.33:
			op.Kind = Delete
		default:
			op.Kind = Get
		}
		p := &pending{op: op, effect: at + latency()}
		p.op.Return = p.effect + latency()
		heap.Push(&h, p)
	}
	for c := range s.clients {
		call(c, int64(c))
	}
	for h.Len() > 0 {
		p := heap.Pop(&h).(*pending)
		if !p.returned {
			switch st := state[p.op.Key]; p.op.Kind {
			case Put:
				state[p.op.Key] = register{value: p.op.Value, found: true}
			case Delete:
				state[p.op.Key] = register{}
			default:
				p.op.Value, p.op.Found = st.value, st.found
			}
			p.returned = true
			heap.Push(&h, p)
			continue
		}
		out = append(out, p.op)
		call(p.op.Client, p.op.Return+1)
	}
	return out
}

func TestCheckSimulatedHistories(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ops := newSimulation(withSeed(seed)).run()
			if res := Check(ops, time.Minute); !res.Pass() || res.Linearizable != 4 {
				t.Fatalf("a linearizable history fails: %+v", res)
			}
			stale, culprit := staleRead(ops)
			if culprit < 0 {
				t.Fatal("no read to make stale")
			}
			ops[culprit].Value, ops[culprit].Found = stale, true
			res := Check(ops, time.Minute)
			if len(res.Violations) != 1 || res.Linearizable != 3 {
				t.Fatalf("result %+v, want one violation", res)
			}
			if v := res.Violations[0]; v.Key != ops[culprit].Key || v.Tail[len(v.Tail)-1] != ops[culprit] || !slices.Contains(v.Prefix, ops[culprit]) {
				t.Fatalf("violation of %s ending with %s, want the stale read %s", v.Key, v.Tail[len(v.Tail)-1], ops[culprit])
			}
		})
	}
}

// staleRead finds, in a history, a get called after two puts of its key
// returned one after the other, and returns the older put's value and the
// get's index (-1 if there is none): a get that read that value would be
// stale.
func staleRead(ops []Operation) (string, int) {
	type write struct {
		value       string
		call, ret   int64
		prevValue   string
		prevReturns int64
	}
	latest := map[string]*write{}
	for i, op := range ops {
		switch w := latest[op.Key]; {
		case op.Kind == Put && w != nil && op.Call > w.ret:
			latest[op.Key] = &write{value: op.Value, call: op.Call, ret: op.Return, prevValue: w.value, prevReturns: w.ret}
		case op.Kind == Put && w == nil:
			latest[op.Key] = &write{value: op.Value, call: op.Call, ret: op.Return}
		case op.Kind == Get && w != nil && w.prevValue != "" && op.Call > w.ret:
			return w.prevValue, i
		}
	}
	return "", -1
}

// BenchmarkCheckSimulated checks simulated linearizable histories: a
// typical one, and one whose clients stall often (a tenth of the
// operations 1000 times slower than the rest, as on a machine descheduling
// them), which leaves fewer instants when no operation of a key is in
// flight.
func BenchmarkCheckSimulated(b *testing.B) {
	for _, bc := range []struct {
		name string
		sim  simulation
	}{
		{"typical", newSimulation()},
		{"stalls", newSimulation(withKeys(2), withSlow(0.1), withSlowFactor(1000))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ops := bc.sim.run()
			b.ReportAllocs()
			for b.Loop() {
				if res := Check(ops, time.Minute); !res.Pass() {
					b.Fatalf("a linearizable history fails: %+v", res)
				}
			}
		})
	}
}
