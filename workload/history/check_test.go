package history

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		ops  []Operation
		// violation, when set, is the last operation of the key's
		// shortest failing prefix.
		violation *Operation
		leftOut   int
	}{
		{
			name: "sequential put and get",
			ops:  []Operation{put("a", at(0, 10)), read("a", at(20, 30))},
		},
		{
			name: "a stale read after an acknowledged write",
			ops: []Operation{
				put("a", at(0, 10)), put("b", at(20, 30)), read("a", at(40, 50), byClient(2)),
				read("b", at(60, 70)), put("c", at(80, 90)),
			},
			violation: new(read("a", at(40, 50), byClient(2))),
		},
		{
			name: "a read overlapping a write sees the old value",
			ops:  []Operation{put("a", at(0, 10)), put("b", at(20, 30)), read("a", at(25, 35), byClient(2))},
		},
		{
			name: "a read overlapping a write sees the new value",
			ops:  []Operation{put("a", at(0, 10)), put("b", at(20, 30)), read("b", at(15, 25), byClient(2))},
		},
		{
			name: "two overlapping reads see the new then the old value",
			ops: []Operation{
				put("a", at(0, 10)), put("b", at(20, 60)),
				read("b", at(25, 35), byClient(2)), read("a", at(40, 50), byClient(3)),
			},
			violation: new(read("a", at(40, 50), byClient(3))),
		},
		{
			name:      "a read of a value never written",
			ops:       []Operation{put("a", at(0, 10)), read("x", at(20, 30))},
			violation: new(read("x", at(20, 30))),
		},
		{
			name: "a read of nothing before any write",
			ops:  []Operation{readNotFound(at(0, 10)), put("a", at(20, 30)), read("a", at(40, 50))},
		},
		{
			name:      "a read of nothing after an acknowledged put",
			ops:       []Operation{put("a", at(0, 10)), readNotFound(at(20, 30))},
			violation: new(readNotFound(at(20, 30))),
		},
		{
			name: "a read of nothing after an acknowledged delete",
			ops:  []Operation{put("a", at(0, 10)), del(at(20, 30)), readNotFound(at(40, 50))},
		},
		{
			name:      "a read of the deleted value after an acknowledged delete",
			ops:       []Operation{put("a", at(0, 10)), del(at(20, 30)), read("a", at(40, 50))},
			violation: new(read("a", at(40, 50))),
		},
		{
			name: "an unknown put observed long after its call",
			ops:  []Operation{put("a", at(0, 10)), put("b", unknownFrom(20)), read("a", at(30, 40)), read("b", at(100, 110))},
		},
		{
			name: "an unknown put applied after a later acknowledged put",
			ops:  []Operation{put("a", at(0, 10)), put("b", unknownFrom(20), byClient(2)), put("c", at(30, 40)), read("b", at(100, 110))},
		},
		{
			name: "an unknown put observed, then the older value again",
			ops: []Operation{
				put("a", at(0, 10)), put("b", unknownFrom(20), byClient(2)),
				read("b", at(100, 110)), read("a", at(120, 130)),
			},
			violation: new(read("a", at(120, 130))),
		},
		{
			name:    "an unknown put no read observed is left out",
			ops:     []Operation{put("a", at(0, 10)), put("b", unknownFrom(20), byClient(2)), read("a", at(100, 110))},
			leftOut: 1,
		},
		{
			name:    "an unknown delete no later read saw is left out",
			ops:     []Operation{put("a", at(0, 10)), del(unknownFrom(20), byClient(2)), read("a", at(100, 110))},
			leftOut: 1,
		},
		{
			name: "an unknown put observed early and again later",
			ops: []Operation{
				put("a", at(0, 10)), put("b", unknownFrom(20), byClient(2)),
				read("b", at(30, 40)), read("b", at(100, 110)), put("c", at(120, 130)), read("c", at(140, 150)),
			},
		},
		{
			name: "an unknown delete may take effect late",
			ops: []Operation{
				put("a", at(0, 10)), del(unknownFrom(20), byClient(2)),
				read("a", at(30, 40)), readNotFound(at(100, 110)),
			},
		},
		{
			name: "either of two overlapping puts may be in place after them",
			ops: []Operation{
				put("a", at(0, 10)), put("b", at(5, 15), byClient(2)),
				read("a", at(20, 30)), read("a", at(40, 50)), put("c", at(60, 70)), read("c", at(80, 90)),
			},
		},
		{
			name: "a read after a quiescent point fixes which of two puts was last",
			ops: []Operation{
				put("a", at(0, 10)), put("b", at(5, 15), byClient(2)),
				read("b", at(20, 30)), read("a", at(40, 50)),
			},
			violation: new(read("a", at(40, 50))),
		},
		{
			name: "a read of a put called after it, then a stale read",
			ops: []Operation{
				put("a", at(0, 10)), read("b", at(20, 60)), put("b", at(30, 40), byClient(2)),
				read("a", at(70, 80), byClient(3)),
			},
			violation: new(read("a", at(70, 80), byClient(3))),
		},
		{
			name: "an unknown delete needed to explain a read",
			ops: []Operation{
				put("a", at(0, 10)), del(unknownFrom(20), byClient(2)),
				read("a", at(30, 40)), readNotFound(at(100, 110)), readNotFound(at(120, 130)),
			},
		},
		{
			name: "an unknown delete cannot undo itself",
			ops: []Operation{
				put("a", at(0, 10)), del(unknownFrom(20), byClient(2)),
				readNotFound(at(30, 40)), read("a", at(100, 110)),
			},
			violation: new(read("a", at(100, 110))),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := checkOneKey(t, tc.ops, tc.leftOut, tc.violation != nil)
			if !ok {
				return
			}
			if !slices.Contains(v.Prefix, *tc.violation) {
				t.Fatalf("the visualized prefix %v does not show %s", v.Prefix, *tc.violation)
			}
			if v.Key != "k" || v.Operations != len(tc.ops) || len(v.Tail) != v.PrefixLength || v.Tail[len(v.Tail)-1] != *tc.violation {
				t.Fatalf("violation %+v", v)
			}
		})
	}
}

// checkOneKey checks the history ops of one key, of which leftOut are left
// out, and fails the test unless it passes or, if violated, fails with
// exactly one violation, which it returns (ok false when it passed).
func checkOneKey(t *testing.T, ops []Operation, leftOut int, violated bool) (v Violation, ok bool) {
	t.Helper()
	res := Check(ops, time.Minute)
	if res.Keys != 1 || res.LeftOut != leftOut || res.Operations != len(ops)-leftOut || len(res.Unchecked) != 0 {
		t.Fatalf("result %+v, want 1 key, %d operations, %d left out, none unchecked", res, len(ops)-leftOut, leftOut)
	}
	if !violated {
		if !res.Pass() || res.Linearizable != 1 {
			t.Fatalf("not linearizable: %+v", res.Violations)
		}
		return Violation{}, false
	}
	if res.Pass() || len(res.Violations) != 1 || res.Linearizable != 0 {
		t.Fatalf("result %+v, want one violation", res)
	}
	return res.Violations[0], true
}

func TestCheckStartsASegmentInTheStateThePreviousLeaves(t *testing.T) {
	var ops []Operation
	for i := range int64(minSegment) {
		ops = append(ops, put(fmt.Sprint(i), at(10*i, 10*i+5)))
	}
	t0 := int64(10 * minSegment)
	ops = append(ops, read("255", at(t0, t0+5)), read("254", at(t0+10, t0+15)))
	res := Check(ops, time.Minute)
	if len(res.Violations) != 1 {
		t.Fatalf("result %+v, want one violation", res)
	}
	want := []Operation{{Client: StateClient, Kind: Put, Key: "k", Value: "255", Call: t0 - 2, Return: t0 - 1}, ops[len(ops)-2], ops[len(ops)-1]}
	if v := res.Violations[0]; v.PrefixLength != len(ops) || !slices.Equal(v.Prefix, want) {
		t.Fatalf("prefix of %d operations, visualized %v; want %d, %v", v.PrefixLength, v.Prefix, len(ops), want)
	}
}

func TestSegments(t *testing.T) {
	tests := []struct {
		name   string
		ops    []Operation
		minLen int
		want   []int // the segments' lengths, without their start operations
	}{
		{"sequential", []Operation{put("a", at(0, 10)), read("a", at(20, 30)), del(at(40, 50))}, 1, []int{1, 1, 1}},
		{"sequential, two at least", []Operation{put("a", at(0, 10)), read("a", at(20, 30)), del(at(40, 50))}, 2, []int{2, 1}},
		{"overlapping", []Operation{put("a", at(0, 10)), read("a", at(5, 30)), del(at(20, 50)), readNotFound(at(60, 70))}, 1, []int{3, 1}},
		{"touching", []Operation{put("a", at(0, 10)), read("a", at(10, 30))}, 1, []int{2}},
		{"either of two puts may be last", []Operation{put("a", at(0, 10)), put("b", at(5, 15)), read("b", at(20, 30)), read("b", at(40, 50))}, 1, []int{4}},
		{"either of two deletes may be last", []Operation{del(at(0, 10)), del(at(5, 15)), readNotFound(at(20, 30))}, 1, []int{2, 1}},
		{"a put after two overlapping ones", []Operation{put("a", at(0, 10)), put("b", at(5, 15)), put("c", at(20, 30)), read("c", at(40, 50))}, 1, []int{3, 1}},
		{"a write of unknown outcome", []Operation{put("a", at(0, 10)), del(unknownFrom(20)), read("a", at(40, 50)), read("a", at(60, 70))}, 1, []int{1, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, s := range segments(tc.ops, tc.minLen) {
				got = append(got, len(s.run()))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("segments of %v operations, want %v", got, tc.want)
			}
		})
	}
}

func TestCheckSeparatesKeys(t *testing.T) {
	ops := []Operation{
		put("a", at(0, 10), onKey("ok")), read("a", at(20, 30), onKey("ok")),
		put("a", at(0, 10), onKey("bad")), put("b", at(20, 30), onKey("bad")), read("a", at(40, 50), onKey("bad")),
		put("a", at(0, 10), onKey("also-ok")),
	}
	res := Check(ops, time.Minute)
	if res.Keys != 3 || res.Linearizable != 2 || len(res.Violations) != 1 || res.Violations[0].Key != "bad" {
		t.Fatalf("result %+v, want 2 linearizable keys and a violation of key bad", res)
	}
}

func TestCheckTailIsTheEndOfTheFailingPrefix(t *testing.T) {
	var ops []Operation
	for i := range int64(2 * TailLength) {
		ops = append(ops, put(string(rune('A'+i)), at(100*i, 100*i+10)))
	}
	stale := read("A", at(100*2*TailLength, 100*2*TailLength+10))
	ops = append(ops, stale, put("z", at(1e6, 1e6+10)))
	res := Check(ops, time.Minute)
	if len(res.Violations) != 1 {
		t.Fatalf("result %+v, want one violation", res)
	}
	v := res.Violations[0]
	if v.PrefixLength != 2*TailLength+1 || len(v.Tail) != TailLength || v.Tail[TailLength-1] != stale {
		t.Fatalf("prefix %d operations, tail %d ending with %s; want %d, %d ending with the stale read",
			v.PrefixLength, len(v.Tail), v.Tail[len(v.Tail)-1], 2*TailLength+1, TailLength)
	}
}

func TestCheckOutOfTimeIsUnchecked(t *testing.T) {
	ops := []Operation{put("a", at(0, 10), onKey("x")), read("a", at(20, 30), onKey("x")), put("a", at(0, 10), onKey("y"))}
	res := Check(ops, time.Nanosecond)
	if res.Pass() || res.Linearizable != 0 || len(res.Violations) != 0 || strings.Join(res.Unchecked, ",") != "x,y" {
		t.Fatalf("result %+v, want x and y unchecked and no pass", res)
	}
}

func TestWriteVisualization(t *testing.T) {
	res := Check([]Operation{put("a", at(0, 10)), put("b", at(20, 30)), read("a", at(40, 50))}, time.Minute)
	if len(res.Violations) != 1 {
		t.Fatalf("result %+v, want one violation", res)
	}
	v := &res.Violations[0]
	path := filepath.Join(t.TempDir(), "k.html")
	if err := v.WriteVisualization(path); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if v.Visualization != path || !strings.Contains(string(page), "<html") || !strings.Contains(string(page), `get(k) -\u003e \"a\"`) {
		t.Fatalf("visualization %s (%d bytes) does not show the stale read", v.Visualization, len(page))
	}
}
