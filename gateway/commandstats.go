package gateway

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// commandStats counts each command's calls, their time and their error
// replies, for INFO commandstats; CONFIG RESETSTAT clears them, as Redis'
// do. A call refused before it ran (a wrong number of arguments, not
// authenticated) counts as rejected, one that ran and answered an error
// as failed.
type commandStats struct {
	mu     sync.Mutex // guards byName
	byName map[string]*commandStat
}

type commandStat struct {
	calls, rejected, failed uint64
	took                    time.Duration
}

// count counts a call of name that answered reply after d; refused says
// it did not run.
func (cs *commandStats) count(name string, reply []byte, d time.Duration, refused bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byName == nil {
		cs.byName = map[string]*commandStat{}
	}
	st := cs.byName[name]
	if st == nil {
		st = &commandStat{}
		cs.byName[name] = st
	}
	switch {
	case refused:
		st.rejected++
		return
	case len(reply) > 0 && reply[0] == '-':
		st.failed++
	}
	st.calls++
	st.took += d
}

// reset clears the counts.
func (cs *commandStats) reset() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.byName = nil
}

// write writes INFO's commandstats section's lines.
func (cs *commandStats) write(b *strings.Builder) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, n := range slices.Sorted(maps.Keys(cs.byName)) {
		st := cs.byName[n]
		usec := st.took.Microseconds()
		per := 0.0
		if st.calls > 0 {
			per = float64(usec) / float64(st.calls)
		}
		fmt.Fprintf(b, "cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d\r\n",
			n, st.calls, usec, per, st.rejected, st.failed)
	}
}
