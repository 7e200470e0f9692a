package history

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"
)

// incr is an acknowledged increment by delta that returned sum.
func incr(delta int64, sum string, opts ...opOption) Operation {
	return newOp(Incr, append([]opOption{func(op *Operation) { op.Delta, op.Value, op.Found = delta, sum, true }}, opts...)...)
}

// incrRefused is an increment by delta the store refused.
func incrRefused(delta int64, opts ...opOption) Operation {
	return newOp(Incr, append([]opOption{func(op *Operation) { op.Delta = delta }}, opts...)...)
}

// incrUnknown is an increment by delta of unknown outcome called at call.
func incrUnknown(delta, call int64, opts ...opOption) Operation {
	return newOp(Incr, append([]opOption{func(op *Operation) { op.Delta = delta }, unknownFrom(call)}, opts...)...)
}

func TestCheckWithIncrements(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operation
		// violation, when set, is the last operation of the key's
		// shortest failing prefix.
		violation *Operation
		leftOut   int
	}{
		{
			name: "increments from a missing key",
			ops:  []Operation{incr(1, "1", at(0, 10)), incr(1, "2", at(20, 30)), read("2", at(40, 50))},
		},
		{
			name: "an increment of a put integer",
			ops:  []Operation{put("10", at(0, 10)), incr(5, "15", at(20, 30)), read("15", at(40, 50))},
		},
		{
			name:      "a lost increment: two sequential increments return the same sum",
			ops:       []Operation{incr(1, "1", at(0, 10)), incr(1, "1", at(20, 30), byClient(2))},
			violation: new(incr(1, "1", at(20, 30), byClient(2))),
		},
		{
			name: "overlapping increments return their sums in either order",
			ops: []Operation{
				incr(1, "2", at(0, 30)), incr(1, "1", at(10, 40), byClient(2)), read("2", at(50, 60)),
			},
		},
		{
			name:      "a read of a sum no increment returned",
			ops:       []Operation{incr(1, "1", at(0, 10)), incr(1, "2", at(20, 30)), read("3", at(40, 50))},
			violation: new(read("3", at(40, 50))),
		},
		{
			name: "an increment after a delete starts from 0",
			ops:  []Operation{put("10", at(0, 10)), del(at(20, 30)), incr(1, "1", at(40, 50))},
		},
		{
			name:      "an increment that ignores an acknowledged delete",
			ops:       []Operation{put("10", at(0, 10)), del(at(20, 30)), incr(1, "11", at(40, 50))},
			violation: new(incr(1, "11", at(40, 50))),
		},
		{
			name: "a refused increment of a value that is not an integer",
			ops:  []Operation{put("x", at(0, 10)), incrRefused(1, at(20, 30)), read("x", at(40, 50))},
		},
		{
			name:      "a refused increment of an integer",
			ops:       []Operation{put("5", at(0, 10)), incrRefused(1, at(20, 30))},
			violation: new(incrRefused(1, at(20, 30))),
		},
		{
			name: "an increment of unknown outcome applied",
			ops: []Operation{
				incr(1, "1", at(0, 10)), incrUnknown(1, 20, byClient(2)), read("2", at(30, 40)), incr(1, "3", at(50, 60)),
			},
		},
		{
			name: "an increment of unknown outcome not applied",
			ops: []Operation{
				incr(1, "1", at(0, 10)), incrUnknown(1, 20, byClient(2)), read("1", at(30, 40)), incr(1, "2", at(50, 60)),
			},
		},
		{
			name: "an increment of unknown outcome applied late",
			ops: []Operation{
				incr(1, "1", at(0, 10)), incrUnknown(1, 20, byClient(2)), read("1", at(30, 40)), read("2", at(100, 110)),
			},
		},
		{
			name: "an increment of unknown outcome applies at most once",
			ops: []Operation{
				incr(1, "1", at(0, 10)), incrUnknown(1, 20, byClient(2)), read("2", at(30, 40)), read("3", at(50, 60)),
			},
			violation: new(read("3", at(50, 60))),
		},
		{
			name: "an increment of unknown outcome cannot undo itself",
			ops: []Operation{
				incr(1, "1", at(0, 10)), incrUnknown(1, 20, byClient(2)), read("2", at(30, 40)), read("1", at(50, 60)),
			},
			violation: new(read("1", at(50, 60))),
		},
		{
			name: "an increment of unknown outcome applied after a later put",
			ops: []Operation{
				put("10", at(0, 10)), incrUnknown(1, 20, byClient(2)), put("20", at(30, 40)), read("21", at(50, 60)),
			},
		},
		{
			name: "an increment of unknown outcome of a value that is not an integer",
			ops:  []Operation{put("x", at(0, 10)), incrUnknown(1, 20, byClient(2)), read("x", at(30, 40))},
		},
		{
			name: "a put of unknown outcome only an increment read",
			ops:  []Operation{put("10", unknownFrom(0)), incr(1, "11", at(10, 20), byClient(2))},
		},
		{
			name: "a put of unknown outcome ends at the increment that read it",
			ops: []Operation{
				put("10", unknownFrom(0)), incr(1, "11", at(10, 20), byClient(2)), read("10", at(30, 40), byClient(3)),
			},
			violation: new(read("10", at(30, 40), byClient(3))),
		},
		{
			name: "a put of unknown outcome carried to a read by an increment of unknown outcome",
			ops: []Operation{
				put("10", at(0, 5)), put("20", unknownFrom(10), byClient(2)), incrUnknown(1, 12, byClient(3)),
				read("21", at(100, 110)),
			},
		},
		{
			name: "a put of unknown outcome whose value an increment also returned",
			ops: []Operation{
				put("5", at(0, 10)), put("7", unknownFrom(20), byClient(2)), incr(2, "7", at(30, 40)),
				read("7", at(50, 60)), incr(1, "8", at(70, 80)), read("7", at(90, 100)),
			},
		},
		{
			name: "a put of 0 of unknown outcome an increment from 0 read",
			ops:  []Operation{put("5", at(0, 5)), put("0", unknownFrom(10), byClient(2)), incr(1, "1", at(20, 30))},
		},
		{
			name: "a delete of unknown outcome before an increment from 0",
			ops:  []Operation{put("5", at(0, 10)), del(unknownFrom(20), byClient(2)), incr(1, "1", at(30, 40))},
		},
		{
			name:    "a delete of unknown outcome no read may have seen is left out",
			ops:     []Operation{put("5", at(0, 10)), readNotFound(at(0, 15), byClient(3)), del(unknownFrom(20), byClient(2)), incr(1, "6", at(30, 40))},
			leftOut: 1,
		},
		{
			name: "a delete of unknown outcome seen by a read called before it",
			ops:  []Operation{put("a", at(0, 10)), readNotFound(at(15, 100)), del(unknownFrom(20), byClient(2))},
		},
		{
			name: "a delete of unknown outcome seen by a read returning as it is called",
			ops:  []Operation{put("a", at(0, 10)), readNotFound(at(15, 20)), del(unknownFrom(20), byClient(2))},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := checkOneKey(t, tc.ops, tc.leftOut, tc.violation != nil)
			if !ok {
				return
			}
			if !slices.Contains(v.Prefix, *tc.violation) || v.Tail[len(v.Tail)-1] != *tc.violation {
				t.Fatalf("violation ending with %s, prefix %v; want it to end with %s", v.Tail[len(v.Tail)-1], v.Prefix, *tc.violation)
			}
		})
	}
}

func TestSegmentsWithIncrements(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operation
		want []int // the segments' lengths, without their start operations
	}{
		{"sequential increments", []Operation{incr(1, "1", at(0, 10)), incr(1, "2", at(20, 30)), read("2", at(40, 50))}, []int{1, 1, 1}},
		{"either of two increments may be last", []Operation{incr(1, "1", at(0, 10)), incr(1, "2", at(5, 15)), read("2", at(20, 30))}, []int{3}},
		{"a refused increment is no write", []Operation{put("x", at(0, 10)), incrRefused(1, at(5, 15)), read("x", at(20, 30))}, []int{2, 1}},
		{"an increment of unknown outcome", []Operation{incr(1, "1", at(0, 10)), incrUnknown(1, 20), read("2", at(30, 40)), read("2", at(50, 60))}, []int{1, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, s := range segments(tc.ops, 1) {
				got = append(got, len(s.run()))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("segments of %v operations, want %v", got, tc.want)
			}
		})
	}
	// A segment after an increment starts with a put of its sum.
	segs := segments([]Operation{put("7", at(0, 10)), incr(3, "10", at(20, 30)), read("10", at(40, 50))}, 1)
	if start := segs[2].ops[0]; len(segs) != 3 || start.Client != StateClient || start.Kind != Put || start.Value != "10" {
		t.Fatalf("the last segment starts with %s, want a put of 10", start)
	}
}

func TestClosedPrefixWithIncrements(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operation
		n    int
		want []int // the indexes of ops in the closed prefix
	}{
		{
			name: "a read of the sum of later increments, through their chain",
			ops: []Operation{
				put("10", at(0, 10)), read("12", at(20, 100), byClient(3)), incr(1, "11", at(30, 40)),
				incr(1, "12", at(50, 60)), put("99", at(70, 80)),
			},
			n: 2, want: []int{0, 1, 2, 3},
		},
		{
			name: "an increment of unknown outcome may have read any write",
			ops: []Operation{
				read("11", at(20, 100)), incrUnknown(1, 30, byClient(2)), put("99", at(70, 80)), read("99", at(110, 120)),
			},
			n: 1, want: []int{0, 1, 2},
		},
		{
			name: "a refused increment reads a later put of a value that is not an integer",
			ops: []Operation{
				incrRefused(1, at(0, 50)), put("x", at(10, 20), byClient(2)), put("7", at(30, 40), byClient(2)),
				put("y", at(60, 70), byClient(2)),
			},
			n: 1, want: []int{0, 1},
		},
		{
			name: "an increment from 0 may have read a later delete",
			ops: []Operation{
				put("5", at(0, 10)), incr(1, "1", at(20, 100)), del(at(30, 40), byClient(2)), del(at(150, 160), byClient(2)),
			},
			n: 2, want: []int{0, 1, 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var want []Operation
			for _, i := range tc.want {
				want = append(want, tc.ops[i])
			}
			if got := (segment{ops: tc.ops}).closedPrefix(tc.n); !slices.Equal(got, want) {
				t.Fatalf("closed prefix %v, want %v", got, want)
			}
		})
	}
}

func TestPossibleFinalsWithIncrements(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operation
		want Finals
	}{
		{
			name: "the last acknowledged increment",
			ops:  []Operation{incr(1, "1", at(0, 10)), incr(1, "2", at(20, 30))},
			want: Finals{Values: []string{"2"}},
		},
		{
			name: "overlapping increments may each be last",
			ops:  []Operation{incr(1, "1", at(0, 30)), incr(1, "2", at(10, 40), byClient(2))},
			want: Finals{Values: []string{"1", "2"}},
		},
		{
			name: "increments of unknown outcome add a range",
			ops: []Operation{
				put("10", at(0, 10)), incrUnknown(1, 20), incrUnknown(1, 30, byClient(2)), incrUnknown(-1, 40, byClient(3)),
			},
			want: Finals{Values: []string{"10"}, MinAdded: -1, MaxAdded: 2},
		},
		{
			name: "a refused increment is no write",
			ops:  []Operation{put("x", at(0, 10)), incrRefused(1, at(20, 30))},
			want: Finals{Values: []string{"x"}},
		},
		{
			name: "no acknowledged write, an increment of unknown outcome",
			ops:  []Operation{incrUnknown(1, 0)},
			want: Finals{NotFound: true, MaxAdded: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PossibleFinals(tc.ops); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("PossibleFinals = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFinalsAllowsIncrements(t *testing.T) {
	value := func(v string) Observed { return Observed{Value: v, Found: true} }
	ten := Finals{Values: []string{"x", "10"}, MinAdded: -1, MaxAdded: 2}
	tests := []struct {
		name   string
		finals Finals
		got    Observed
		want   bool
	}{
		{"a value", ten, value("10"), true},
		{"a value plus the most added", ten, value("12"), true},
		{"a value plus the least added", ten, value("9"), true},
		{"beyond the most added", ten, value("13"), false},
		{"beyond the least added", ten, value("8"), false},
		{"a value that is not an integer", ten, value("y"), false},
		{"not found when it is not possible", ten, Observed{}, false},
		{"added to a missing key", Finals{NotFound: true, MaxAdded: 2}, value("2"), true},
		{"not found while increments may add", Finals{NotFound: true, MaxAdded: 2}, Observed{}, true},
		{"nothing added to a value that is not an integer", Finals{Values: []string{"x"}, MaxAdded: 1}, value("1"), false},
		{"an overflowing difference", Finals{Values: []string{"-9223372036854775808"}, MaxAdded: 1}, value("9223372036854775807"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.finals.Allows(tc.got); got != tc.want {
				t.Fatalf("%s allows %s: %v, want %v", tc.finals, tc.got, got, tc.want)
			}
		})
	}
	if got, want := ten.String(), `"x" or "10", plus -1 to 2 from increments of unknown outcome`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}

// simulateIncrements records clients running gets, puts (of integers
// spaced a million apart, and a few of other values), deletes and
// increments on atomic registers, each taking effect at an instant within
// its interval. A few writes get no answer: they take effect at once, late
// or never, and are recorded with an unknown outcome. The history is
// linearizable by construction; finals is what each key holds in the end.
func simulateIncrements(seed uint64, clients, n, keys, unknownEvery int) (ops []Operation, finals map[string]Observed) {
	rng := rand.New(rand.NewPCG(seed, 3))
	latency := func() int64 { return 1000 + rng.Int64N(4000) }
	type timed struct {
		op     Operation
		effect int64
		never  bool
	}
	all := make([]*timed, 0, n)
	next := make([]int64, clients) // each client's next call
	for i := range n {
		c := i % clients
		op := Operation{Client: c, Key: fmt.Sprintf("k%d", rng.IntN(keys)), Call: next[c]}
		switch r := rng.IntN(40); {
		case r < 16:
			op.Kind = Get
		case r < 24:
			op.Kind, op.Value = Put, strconv.Itoa((i+1)*1_000_000)
		case r < 25:
			op.Kind, op.Value = Put, fmt.Sprintf("x%d", i)
		case r < 27:
			op.Kind = Delete
		default:
			op.Kind, op.Delta = Incr, []int64{1, 1, 1, 5, -1}[rng.IntN(5)]
		}
		tm := &timed{op: op, effect: op.Call + latency()}
		tm.op.Return = tm.effect + latency()
		next[c] = tm.op.Return + 1
		if op.Kind != Get && rng.IntN(unknownEvery) == 0 {
			tm.op.Return, next[c] = Unknown, op.Call+20_000
			switch rng.IntN(3) {
			case 0:
				tm.never = true
			case 1:
				tm.effect += 30 * latency()
			}
		}
		all = append(all, tm)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].effect < all[j].effect })
	state := map[string]Observed{}
	for _, tm := range all {
		op, st := &tm.op, state[tm.op.Key]
		switch {
		case tm.never:
		case op.Kind == Get:
			op.Value, op.Found = st.Value, st.Found
		case op.Kind == Put:
			state[op.Key] = Observed{Value: op.Value, Found: true}
		case op.Kind == Delete:
			delete(state, op.Key)
		default:
			n, err := strconv.ParseInt(st.Value, 10, 64)
			if st.Found && (err != nil || strconv.FormatInt(n, 10) != st.Value) {
				break // refused: recorded as such when acknowledged
			}
			sum := strconv.FormatInt(n+op.Delta, 10)
			state[op.Key] = Observed{Value: sum, Found: true}
			if !op.OutcomeUnknown() {
				op.Value, op.Found = sum, true
			}
		}
		ops = append(ops, *op)
	}
	finals = map[string]Observed{}
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		finals[key] = state[key]
	}
	return ops, finals
}

func TestCheckSimulatedIncrements(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			ops, finals := simulateIncrements(seed, 12, 6000, 4, 150)
			var incrs, unknown, refused int
			for _, op := range ops {
				if op.Kind == Incr {
					incrs++
					switch {
					case op.OutcomeUnknown():
						unknown++
					case !op.Found:
						refused++
					}
				}
			}
			if incrs < 1000 || unknown == 0 || refused == 0 {
				t.Fatalf("%d increments, %d of unknown outcome, %d refused: the simulation exercises too little", incrs, unknown, refused)
			}
			if res := Check(ops, time.Minute); !res.Pass() || res.Linearizable != 4 {
				t.Fatalf("a linearizable history fails: %+v", res)
			}
			if lost := LostWrites(ops, finals); len(lost) > 0 {
				t.Fatalf("the final values are reported lost: %v", lost)
			}
			// An increment that returned a sum nothing leaves is found:
			// the failing prefix ends with it, or with an operation
			// overlapping it that read the sum it did return. Where
			// increments of unknown outcome may have read it, the prefix
			// may end a little before it, and holds it.
			culprit := corruptAnIncrement(t, ops)
			v := checkOneViolation(t, ops, culprit.Key)
			if last := v.Tail[len(v.Tail)-1]; !overlaps(last, culprit) && (!slices.Contains(v.Prefix, culprit) || last.Call > culprit.Call) {
				t.Fatalf("violation ending with %s, want the corrupted increment %s, an operation overlapping it, or one before it with it in the prefix", last, culprit)
			}
			ops, _ = simulateIncrements(seed, 12, 6000, 4, math.MaxInt)
			culprit = corruptAnIncrement(t, ops)
			v = checkOneViolation(t, ops, culprit.Key)
			if last := v.Tail[len(v.Tail)-1]; !overlaps(last, culprit) {
				t.Fatalf("violation ending with %s, want the corrupted increment %s or an operation overlapping it", last, culprit)
			}
		})
	}
}

// overlaps reports whether a and b were in flight together (or are one).
func overlaps(a, b Operation) bool { return a.Call <= b.Return && b.Call <= a.Return }

// corruptAnIncrement adds half a million to the sum an acknowledged
// increment of the second half of ops returned, which no operation then
// leaves, and returns the increment.
func corruptAnIncrement(t *testing.T, ops []Operation) Operation {
	t.Helper()
	i := slices.IndexFunc(ops, func(op Operation) bool { return op.Kind == Incr && op.Found && op.Call > ops[len(ops)/2].Call })
	if i < 0 {
		t.Fatal("no increment to corrupt")
	}
	sum, _ := strconv.ParseInt(ops[i].Value, 10, 64)
	ops[i].Value = strconv.FormatInt(sum+500_000, 10)
	return ops[i]
}

// checkOneViolation checks ops and returns its violation, of key.
func checkOneViolation(t *testing.T, ops []Operation, key string) Violation {
	t.Helper()
	res := Check(ops, time.Minute)
	if len(res.Violations) != 1 || res.Linearizable != res.Keys-1 || res.Violations[0].Key != key {
		t.Fatalf("result %+v, want one violation, of %s", res, key)
	}
	return res.Violations[0]
}
