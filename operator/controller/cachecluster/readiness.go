package cachecluster

import (
	"strings"
	"sync"
	"time"

	"github.com/distcache/distcache/failover"
)

// readinessClock remembers, per member, when this operator first saw the
// member's readiness take its current value, to the nanosecond. The API
// keeps times to the second (a pod's Ready lastTransitionTime, a member's
// status since): measured from them, a grace period or hold-down of a
// second would end up to a second early. The zero value is ready to use.
type readinessClock struct {
	mu   sync.Mutex               // guards seen
	seen map[string]readinessSeen // by namespace/cluster/member
}

// readinessSeen is a member's readiness and since when this operator knows it.
type readinessSeen struct {
	ready bool
	since time.Time
}

// refine returns o, observed at now, with the precise start of its
// readiness episode. An episode this clock knows keeps the time it
// recorded: the same readiness, started within the second o's Since
// truncates, or, for a member not Ready, any time before (its pod replaced
// by a new one that is not Ready yet: the member has not been Ready
// since). A new one started in [o.Since, o.Since+1s) and at the latest
// now: now when that is within the second (the operator sees a change as
// it happens), else o.Since (an operator that started later learns it
// from the API).
func (c *readinessClock) refine(key string, o failover.Observation, now time.Time) failover.Observation {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.seen[key]; ok && s.ready == o.Ready && s.since.Sub(o.Since) < time.Second && (!o.Ready || !s.since.Before(o.Since)) {
		o.Since = s.since
		return o
	}
	if d := now.Sub(o.Since); d >= 0 && d < time.Second {
		o.Since = now
	}
	if c.seen == nil {
		c.seen = map[string]readinessSeen{}
	}
	c.seen[key] = readinessSeen{ready: o.Ready, since: o.Since}
	return o
}

// forget drops what the clock knows of the members of cluster
// (namespace/name).
func (c *readinessClock) forget(cluster string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.seen {
		if strings.HasPrefix(k, cluster+"/") {
			delete(c.seen, k)
		}
	}
}
