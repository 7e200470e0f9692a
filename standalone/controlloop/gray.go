package controlloop

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/metrics"
)

// busyFrom is the utilization of its emulated capacity from which a member
// counts as busy. A node whose PINGs wait longer than a probe's timeout
// behind its own requests has had them queue for its capacity the whole
// time, so it reports about 1; a node whose answers are slow for another
// reason (delayed on the way: a gray failure) uses its capacity as usual,
// or less, as readers pass over it.
const busyFrom = 0.9

// utilizations records the utilization each member's last answered
// /healthz reported (metrics.UtilizationHeader). It is safe for concurrent
// use: the HTTP prober writes it while the PING prober reads it.
type utilizations struct {
	mu   sync.Mutex         // guards last
	last map[string]float64 // member → utilization reported
}

func newUtilizations() *utilizations { return &utilizations{last: map[string]float64{}} }

// record stores the utilization member's /healthz answer h reported; an
// answer without one (an unlimited node) forgets the member.
func (u *utilizations) record(member string, h http.Header) {
	v, err := strconv.ParseFloat(h.Get(metrics.UtilizationHeader), 64)
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		delete(u.last, member)
		return
	}
	u.last[member] = v
}

// spare reports whether member's last /healthz said it had capacity to
// spare (a utilization below busyFrom). Unknown is not spare.
func (u *utilizations) spare(member string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	v, ok := u.last[member]
	return ok && v < busyFrom
}

// grayFailure is the PING prober's shorter patience for a member that
// leaves PINGs unanswered while its /healthz says it has capacity to
// spare: it is not late because it is busy, so waiting out a burst of load
// would only let its slowness hold up the writes of its keys.
type grayFailure struct {
	patience time.Duration
	reported *utilizations // nil: every member gets the PING prober's patience
}

// patienceFor returns how long member's PINGs may go unanswered: the gray
// failure patience when it reports spare capacity, else long.
func (g grayFailure) patienceFor(member string, long time.Duration) time.Duration {
	if g.reported != nil && g.reported.spare(member) {
		return min(g.patience, long)
	}
	return long
}
