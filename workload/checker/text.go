package checker

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText writes the verdict in readable form: the summary line, the
// workload, the counts, the stale clients' events, the linearizability
// check with the end of each violating key's shortest failing history, and
// the read-backs with their lost writes.
func (v *Verdict) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	s, c := &v.Settings, &v.Counts
	fmt.Fprintln(bw, v.Summary())
	fmt.Fprintln(bw)
	fmt.Fprintf(bw, "workload: %v (ended by %s) on map version %d", v.Elapsed.Round(time.Millisecond), v.EndedBy, v.FirstMap)
	if v.LastMap != v.FirstMap {
		fmt.Fprintf(bw, " → %d", v.LastMap)
	}
	fmt.Fprintf(bw, ", %d keys (Zipf %.2f), %.0f%% writes (%.0f%% of them deletes), %d workers over %d clients (%d stale), seed %d\n",
		s.Keys, s.Skew, 100*s.WriteRatio, 100*s.DeleteShare, s.Workers, s.Clients, s.StaleClients, s.Seed)
	fmt.Fprintf(bw, "reads: %d (%d cache hits, %d not found, %d failed: left out)\n", c.Gets, c.Hits, c.NotFound, c.FailedReads)
	fmt.Fprintf(bw, "writes: %d (%d puts, %d deletes): %d acknowledged, %d refused with a coherence timeout (not applied), %d of unknown outcome (%d timed out); %d preload writes\n",
		c.Puts+c.Deletes, c.Puts, c.Deletes, c.Acknowledged, c.Refused, c.Unknown, c.TimedOut, c.Preload)
	if c.StorageReads+c.StorageWrites+c.HeldWrites > 0 {
		fmt.Fprintf(bw, "direct: %d reads and %d writes at Redis, %d writes of keys a cache may hold through the shims\n",
			c.StorageReads, c.StorageWrites, c.HeldWrites)
	}
	if c.LeafReads > 0 {
		fmt.Fprintf(bw, "client leaf: %d reads sent through it, %d of them read on without it (no answer in time, or refused)\n", c.LeafReads, c.LeafFallbacks)
	}
	for _, e := range v.Stale {
		if e.Frozen {
			fmt.Fprintf(bw, "stale clients frozen at %v on map version %d\n", e.At.Round(time.Millisecond), e.StaleMap)
		} else {
			fmt.Fprintf(bw, "stale clients thawed at %v: map version %d → %d\n", e.At.Round(time.Millisecond), e.StaleMap, e.CurrentMap)
		}
	}
	v.writeLinearizability(bw)
	v.writeReadBack(bw, "through the cache", &v.Routed)
	if v.Direct == nil {
		fmt.Fprintln(bw, "read-back from Redis: not done (no Redis address known)")
	} else {
		v.writeReadBack(bw, "from Redis", v.Direct)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cannot write the verdict: %w", err)
	}
	return nil
}

func (v *Verdict) writeLinearizability(w io.Writer) {
	lin := &v.Linearizability
	fmt.Fprintf(w, "linearizability: %d operations on %d keys", lin.Operations, lin.Keys)
	if lin.LeftOut > 0 {
		fmt.Fprintf(w, " (%d puts of unknown outcome that no read observed left out)", lin.LeftOut)
	}
	fmt.Fprintf(w, ", checked in %v: %d linearizable, %d not, %d unchecked\n",
		lin.Elapsed.Round(time.Millisecond), lin.Linearizable, len(lin.Violations), len(lin.Unchecked))
	for _, vi := range lin.Violations {
		fmt.Fprintf(w, "  key %s: %d operations; the first %d are not linearizable, the last %d of them:\n",
			vi.Key, vi.Operations, vi.PrefixLength, len(vi.Tail))
		for _, op := range vi.Tail {
			fmt.Fprintf(w, "    %s\n", op)
		}
		if vi.Visualization != "" {
			fmt.Fprintf(w, "    visualization: %s\n", vi.Visualization)
		}
		if h := v.Histories[vi.Key]; h != "" {
			fmt.Fprintf(w, "    history: %s\n", h)
		}
	}
	if len(lin.Unchecked) > 0 {
		fmt.Fprintf(w, "  unchecked (the check timed out): %s\n", strings.Join(lin.Unchecked, ", "))
	}
}

func (v *Verdict) writeReadBack(w io.Writer, source string, r *ReadBack) {
	fmt.Fprintf(w, "read-back %s: %d keys read", source, r.Read)
	if len(r.Unread) > 0 {
		fmt.Fprintf(w, ", %d not read (%s)", len(r.Unread), strings.Join(r.Unread, ", "))
	}
	if len(r.Lost) == 0 {
		fmt.Fprintln(w, ", no lost write")
		return
	}
	fmt.Fprintf(w, ", %s:\n", plural(len(r.Lost), "lost write", "lost writes"))
	for _, l := range r.Lost {
		fmt.Fprintf(w, "  %s\n", l)
		if h := v.Histories[l.Key]; h != "" {
			fmt.Fprintf(w, "    history: %s\n", h)
		}
	}
}
