package antireplay_test

import (
	"testing"

	"github.com/distcache/distcache/dataplane/antireplay"
)

// TestWindow feeds a window sequence numbers in order and checks each
// verdict: reordering within the window is accepted once, duplicates and
// numbers WindowLen or more behind the highest are refused.
func TestWindow(t *testing.T) {
	const n = antireplay.WindowLen
	type step struct {
		seq  uint64
		want antireplay.Verdict
	}
	tests := []struct {
		name  string
		start uint64
		steps []step
	}{
		{"in order", 1, []step{{2, antireplay.Accepted}, {3, antireplay.Accepted}, {4, antireplay.Accepted}}},
		{"the start again", 5, []step{{5, antireplay.Duplicate}}},
		{"reordered within the window", 1, []step{{5, antireplay.Accepted}, {3, antireplay.Accepted}, {2, antireplay.Accepted}, {4, antireplay.Accepted}, {3, antireplay.Duplicate}}},
		{"below the start, within the window", 5000, []step{{5000 - n + 1, antireplay.Accepted}, {4999, antireplay.Accepted}, {4999, antireplay.Duplicate}}},
		{"below the start, outside the window", 5000, []step{{5000 - n, antireplay.TooOld}, {1, antireplay.TooOld}}},
		{"a jump of more than a word", 10, []step{{80, antireplay.Accepted}, {10, antireplay.Duplicate}, {11, antireplay.Accepted}, {79, antireplay.Accepted}}},
		{"a jump of more than the window", 10, []step{{10 + n, antireplay.Accepted}, {10, antireplay.TooOld}, {11, antireplay.Accepted}, {11, antireplay.Duplicate}}},
		{"a jump far beyond", 10, []step{{1 << 40, antireplay.Accepted}, {1<<40 - 1, antireplay.Accepted}, {10, antireplay.TooOld}}},
		{"the edge of the window after a slide", 1, []step{{2000, antireplay.Accepted}, {2000 - n + 1, antireplay.Accepted}, {2000 - n, antireplay.TooOld}, {2000 - n + 1, antireplay.Duplicate}}},
		{"slides of a word and a part", 1, []step{{1100, antireplay.Accepted}, {1100 - 700, antireplay.Accepted}, {1100 + 67, antireplay.Accepted}, {1100 - 700, antireplay.Duplicate}, {1100, antireplay.Duplicate}, {1100 - 699, antireplay.Accepted}}},
		{"bits survive slides across words", 1, []step{{70, antireplay.Accepted}, {100, antireplay.Accepted}, {130, antireplay.Accepted}, {70, antireplay.Duplicate}, {100, antireplay.Duplicate}, {71, antireplay.Accepted}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w antireplay.Window
			w.Start(tt.start)
			for i, s := range tt.steps {
				if got := w.Check(s.seq); got != s.want {
					t.Fatalf("step %d: Check(%d) = %v, want %v", i, s.seq, got, s.want)
				}
				if got := w.Accept(s.seq); got != s.want {
					t.Fatalf("step %d: Accept(%d) = %v, want %v", i, s.seq, got, s.want)
				}
			}
		})
	}
}

// TestWindowAgainstSet checks the window against a plain set of the
// numbers accepted, over a pseudo-random walk that reorders within and
// beyond the window: a number is accepted iff it is new and less than
// WindowLen behind the highest accepted.
func TestWindowAgainstSet(t *testing.T) {
	var w antireplay.Window
	const start = 1 << 20
	w.Start(start)
	seen := map[uint64]bool{start: true}
	high := uint64(start)
	x := uint64(88172645463325252)
	for range 20000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		seq := high + 150 - x%(antireplay.WindowLen+300) // from 150 ahead to 150 beyond the window
		want := antireplay.Accepted
		switch {
		case seq+antireplay.WindowLen <= high:
			want = antireplay.TooOld
		case seen[seq]:
			want = antireplay.Duplicate
		}
		if got := w.Accept(seq); got != want {
			t.Fatalf("Accept(%d) with high %d = %v, want %v", seq, high, got, want)
		}
		if want == antireplay.Accepted {
			seen[seq] = true
			high = max(high, seq)
		}
	}
}
