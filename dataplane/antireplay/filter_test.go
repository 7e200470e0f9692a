package antireplay_test

import (
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/antireplay"
	"github.com/distcache/distcache/dataplane/wire"
)

// start is the receiver's start in the filter tests; stamps are seconds
// after it.
var start = time.Unix(1_800_000_000, 0)

func at(sec float64) int64 { return start.Add(time.Duration(sec * float64(time.Second))).UnixNano() }

func stamp(sender, epoch, seq uint64, sec float64) wire.Stamp {
	return wire.Stamp{Sender: sender, Epoch: epoch, Seq: seq, Time: at(sec)}
}

// TestFilter feeds a filter stamps and checks every verdict.
func TestFilter(t *testing.T) {
	type step struct {
		st   wire.Stamp
		want antireplay.Verdict
	}
	const a, b, c = 0xA, 0xB, 0xC
	tests := []struct {
		name    string
		senders int // 0: the default; with one shard
		steps   []step
	}{
		{"a new sender, then the same stamp again", 0, []step{
			{stamp(a, 1, 10, 1), antireplay.Accepted},
			{stamp(a, 1, 10, 1), antireplay.Duplicate},
		}},
		{"reordered within the window", 0, []step{
			{stamp(a, 1, 10, 1), antireplay.Accepted},
			{stamp(a, 1, 12, 1), antireplay.Accepted},
			{stamp(a, 1, 11, 1), antireplay.Accepted},
			{stamp(a, 1, 9, 1), antireplay.Accepted},
			{stamp(a, 1, 11, 1), antireplay.Duplicate},
		}},
		{"outside the window", 0, []step{
			{stamp(a, 1, 1, 1), antireplay.Accepted},
			{stamp(a, 1, 1+antireplay.WindowLen, 1), antireplay.Accepted},
			{stamp(a, 1, 1, 1), antireplay.TooOld},
			{stamp(a, 1, 2, 1), antireplay.Accepted},
		}},
		{"stamped before the receiver started, beyond the skew", 0, []step{
			{stamp(a, 1, 1, -1), antireplay.BeforeFloor},
			{stamp(a, 1, 2, -0.1), antireplay.Accepted},
		}},
		{"a sender restarts", 0, []step{
			{stamp(a, 1, 500, 1), antireplay.Accepted},
			{stamp(a, 2, 1, 2), antireplay.Accepted},
			{stamp(a, 2, 2, 2), antireplay.Accepted},
			{stamp(a, 1, 501, 1.5), antireplay.OldEpoch},
			{stamp(a, 1, 500, 1), antireplay.OldEpoch},
			{stamp(a, 2, 1, 2), antireplay.Duplicate},
		}},
		{"senders are apart", 0, []step{
			{stamp(a, 1, 7, 1), antireplay.Accepted},
			{stamp(b, 1, 7, 1), antireplay.Accepted},
			{stamp(b, 1, 7, 1), antireplay.Duplicate},
		}},
		{"a forgotten sender's datagrams stay refused", 1, []step{
			{stamp(a, 1, 1, 1), antireplay.Accepted},
			{stamp(a, 1, 2, 2), antireplay.Accepted},
			{stamp(b, 1, 1, 3), antireplay.Accepted}, // forgets a
			{stamp(c, 1, 1, 4), antireplay.Accepted},
			{stamp(a, 1, 2, 2), antireplay.BeforeFloor},
			{stamp(a, 1, 3, 5), antireplay.Accepted},
			{stamp(a, 1, 2, 2), antireplay.BeforeFloor},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := antireplay.New(antireplay.Config{Start: start, Senders: tt.senders, Skew: 500 * time.Millisecond, Shards: 1})
			for i, s := range tt.steps {
				if got := f.Accept(s.st); got != s.want {
					t.Fatalf("step %d: Accept(%+v) = %v, want %v", i, s.st, got, s.want)
				}
			}
		})
	}
}
