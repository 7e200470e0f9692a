package gateway

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// errorStats counts the error replies by their code, the first word of
// the error (ERR, WRONGTYPE, CROSSSLOT...), for INFO errorstats; CONFIG
// RESETSTAT clears them, as Redis' do.
type errorStats struct {
	mu     sync.Mutex // guards counts
	counts map[string]uint64
}

// maxErrorCodes bounds the codes counted: a script can make up any
// (redis.error_reply), as Redis bounds its own table.
const maxErrorCodes = 128

// count counts reply if it is an error.
func (e *errorStats) count(reply []byte) {
	if len(reply) < 3 || reply[0] != '-' {
		return
	}
	code := reply[1:]
	if i := bytes.IndexAny(code, " \r"); i >= 0 {
		code = code[:i]
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]uint64{}
	}
	if _, ok := e.counts[string(code)]; !ok && len(e.counts) >= maxErrorCodes {
		return
	}
	e.counts[string(code)]++
}

// reset clears the counts.
func (e *errorStats) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counts = nil
}

// write writes INFO's errorstats section's lines.
func (e *errorStats) write(b *strings.Builder) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range slices.Sorted(maps.Keys(e.counts)) {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", c, e.counts[c])
	}
}
