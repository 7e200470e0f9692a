package history

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// TailLength is how many operations of a violation's failing prefix its
// Tail keeps.
const TailLength = 40

// visualizationBudget is the least time given to the check that computes a
// violation's visualization, even past Check's deadline: the prefix is the
// shortest failing one, so porcupine usually rejects it at once.
const visualizationBudget = 10 * time.Second

// Result is what Check found.
type Result struct {
	// Keys is the number of keys in the history, Operations the number of
	// operations checked, LeftOut the writes of unknown outcome that no
	// read may have observed (left out: see the package documentation).
	Keys       int `json:"keys"`
	Operations int `json:"operations"`
	LeftOut    int `json:"leftOutUnknownPuts"`
	// Linearizable is the number of keys whose history is linearizable.
	Linearizable int `json:"linearizable"`
	// Violations are the keys whose history is not linearizable, by key.
	Violations []Violation `json:"violations,omitempty"`
	// Unchecked are the keys porcupine did not decide in time, sorted.
	Unchecked []string `json:"unchecked,omitempty"`
	// Elapsed is how long the check took.
	Elapsed time.Duration `json:"elapsed"`
}

// Pass reports whether every key was checked and found linearizable.
func (r *Result) Pass() bool { return len(r.Violations) == 0 && len(r.Unchecked) == 0 }

// Violation is a key whose history is not linearizable.
type Violation struct {
	Key string `json:"key"`
	// Operations is the number of the key's operations checked.
	Operations int `json:"operations"`
	// PrefixLength is the length of the shortest prefix of the key's
	// history (in call order) that is not linearizable, together with the
	// later writes its reads may have read from (a read may return the
	// value of a put called after it): the prefix's last operation is the
	// culprit. Tail is that prefix's last TailLength operations (the
	// culprit last).
	PrefixLength int         `json:"prefixLength"`
	Tail         []Operation `json:"tail"`
	// Prefix is what the visualization shows: the failing prefix from the
	// start of its segment (see segment), after a write (by StateClient)
	// of the state the key held there, followed by the later writes its
	// reads may have read from.
	Prefix []Operation `json:"-"`
	// Visualization is the path WriteVisualization wrote, if any.
	Visualization string `json:"visualization,omitempty"`

	info porcupine.LinearizationInfo // of Prefix
}

// WriteVisualization writes porcupine's visualization of the failing
// prefix (an HTML page) to path and records path in v.Visualization.
func (v *Violation) WriteVisualization(path string) error {
	if err := porcupine.VisualizePath(Model, v.info, path); err != nil {
		return fmt.Errorf("cannot write the visualization of key %s: %w", v.Key, err)
	}
	v.Visualization = path
	return nil
}

// outcome is one key's result.
type outcome struct {
	checked   bool
	violation *Violation
}

// Check checks, key by key, that ops is linearizable (see the package
// documentation), using up to GOMAXPROCS keys at a time. Keys not decided
// within timeout are unchecked; timeout <= 0 means no limit.
func Check(ops []Operation, timeout time.Duration) Result {
	start := time.Now()
	var deadline time.Time
	if timeout > 0 {
		deadline = start.Add(timeout)
	}
	kept := reduceUnknownWrites(ops)
	byKey := ByKey(kept)
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	outcomes := make([]outcome, len(keys))
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range min(runtime.GOMAXPROCS(0), len(keys)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(keys); i = int(next.Add(1)) - 1 {
				outcomes[i] = checkKey(keys[i], byKey[keys[i]], deadline)
			}
		})
	}
	wg.Wait()
	res := Result{Keys: len(keys), Operations: len(kept), LeftOut: len(ops) - len(kept)}
	for i, o := range outcomes {
		switch {
		case !o.checked:
			res.Unchecked = append(res.Unchecked, keys[i])
		case o.violation != nil:
			res.Violations = append(res.Violations, *o.violation)
		default:
			res.Linearizable++
		}
	}
	res.Elapsed = time.Since(start)
	return res
}

// checkKey checks one key's operations (sorted by call time), segment by
// segment (see segment). It first checks them without the deletes and
// increments of unknown outcome (the rest reduced again, see
// reduceUnknownWrites): each is concurrent with everything after its call
// (so nothing after it splits into segments), and a few of them make the
// search space explode, yet a history that is linearizable without them is
// linearizable with them, placed after every other operation (where a
// delete or an increment of unknown outcome is always legal). Only a key
// that fails that way is checked with them.
func checkKey(key string, ops []Operation, deadline time.Time) outcome {
	if fewer := withoutDeferrableUnknowns(ops); len(fewer) < len(ops) {
		if res, _ := checkSegments(reduceUnknownWrites(fewer), deadline); res == porcupine.Ok {
			return outcome{checked: true}
		}
	}
	res, seg := checkSegments(ops, deadline)
	switch res {
	case porcupine.Ok:
		return outcome{checked: true}
	case porcupine.Unknown:
		return outcome{}
	}
	n := shortestFailingPrefix(seg, deadline)
	prefix := seg.closedPrefix(n)
	var budget time.Duration // no limit without a deadline
	if !deadline.IsZero() {
		budget = max(visualizationBudget, time.Until(deadline))
	}
	_, info := porcupine.CheckOperationsVerbose(Model, porcupineOps(prefix), budget)
	length := seg.offset + n
	return outcome{checked: true, violation: &Violation{
		Key: key, Operations: len(ops),
		Prefix: prefix, PrefixLength: length, Tail: ops[max(0, length-TailLength):length],
		info: info,
	}}
}

// checkBy checks ops with whatever time is left before deadline (no limit
// for a zero deadline).
func checkBy(ops []Operation, deadline time.Time) porcupine.CheckResult {
	var left time.Duration
	if !deadline.IsZero() {
		if left = time.Until(deadline); left <= 0 {
			return porcupine.Unknown
		}
	}
	return porcupine.CheckOperationsTimeout(Model, porcupineOps(ops), left)
}

// shortestFailingPrefix bisects for the least n such that the closed
// prefix of seg's first n own operations (see closedPrefix) is not
// linearizable; seg is known not to be. Closed prefixes grow with n and a
// closed part of a linearizable history is linearizable, so the search is
// sound. A prefix porcupine does not decide in time counts as
// linearizable, so the n returned is always one shown to fail.
func shortestFailingPrefix(seg segment, deadline time.Time) int {
	run := len(seg.ops) - seg.start
	i := sort.Search(run, func(i int) bool { return checkBy(seg.closedPrefix(i+1), deadline) == porcupine.Illegal })
	return min(i+1, run)
}

// withoutDeferrableUnknowns returns ops without the deletes and increments
// of unknown outcome.
func withoutDeferrableUnknowns(ops []Operation) []Operation {
	out := make([]Operation, 0, len(ops))
	for _, op := range ops {
		if (op.Kind != Delete && op.Kind != Incr) || !op.OutcomeUnknown() {
			out = append(out, op)
		}
	}
	return out
}

// reduceUnknownWrites simplifies the writes whose outcome is unknown (their
// interval never closes, which makes the search for a linearization costly)
// without changing whether the history is linearizable. A read here is a
// get, or an acknowledged increment, which read the value it added to (or
// nothing, for a sum equal to what it added):
//
//   - a put whose value no read may have returned is dropped: it can
//     always be linearized after every other operation, where it changes
//     nothing any read saw, so a history is linearizable with it iff it is
//     without it (values are unique per put);
//   - a put whose value a read returned ends at the earliest return of such
//     a read, unless an acknowledged increment also left that value: every
//     linearization places the put before the reads that returned its
//     value;
//   - a delete that no read that may have found nothing returned after the
//     delete's call (at or after: porcupine takes operations that touch
//     as concurrent) is dropped: taking effect, it could only make such a
//     read find nothing, so if the history is linearizable it is so
//     without it, and without it linearizable means linearizable with it
//     never applied.
//
// An increment of unknown outcome may carry a put's or a delete's state on
// to a read unseen, and a refused one reads some value that is not an
// integer: on a key with either, puts and deletes of unknown outcome are
// kept as they are. Increments of unknown outcome are kept too (checkKey
// first tries without them).
func reduceUnknownWrites(ops []Operation) []Operation {
	type keyValue struct{ key, value string }
	firstRead := map[keyValue]int64{}  // earliest return of a read of each value
	incremented := map[keyValue]bool{} // the values acknowledged increments left
	lastMiss := map[string]int64{}     // latest return of a read that may have found nothing, by key
	zeroRead := map[string]bool{}      // keys an increment may have read "0" of
	opaque := map[string]bool{}        // keys with increments of unknown outcome or refused
	noteRead := func(key, value string, at int64) {
		kv := keyValue{key, value}
		if r, ok := firstRead[kv]; !ok || at < r {
			firstRead[kv] = at
		}
	}
	for _, op := range ops {
		switch {
		case op.Kind == Get && op.Found:
			noteRead(op.Key, op.Value, op.Return)
		case op.Kind == Get:
			lastMiss[op.Key] = max(lastMiss[op.Key], op.Return)
		case op.Kind != Incr:
		case op.OutcomeUnknown() || !op.Found:
			opaque[op.Key] = true
		default:
			incremented[keyValue{op.Key, op.Value}] = true
			before, ok := addend(op)
			switch {
			case !ok: // it fails anyway
			case before == 0: // from a missing key, or from "0"
				lastMiss[op.Key] = max(lastMiss[op.Key], op.Return)
				zeroRead[op.Key] = true
			default:
				noteRead(op.Key, strconv.FormatInt(before, 10), op.Return)
			}
		}
	}
	kept := make([]Operation, 0, len(ops))
	for _, op := range ops {
		if op.OutcomeUnknown() && !opaque[op.Key] {
			switch op.Kind {
			case Put:
				kv := keyValue{op.Key, op.Value}
				r, seen := firstRead[kv]
				if !seen && (op.Value != "0" || !zeroRead[op.Key]) {
					continue
				}
				if seen && !incremented[kv] && r > op.Call {
					op.Return = r
				}
			case Delete:
				if last, ok := lastMiss[op.Key]; !ok || last < op.Call {
					continue
				}
			}
		}
		kept = append(kept, op)
	}
	return kept
}
