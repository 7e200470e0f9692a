package checker

import (
	"fmt"
	"strings"
	"time"

	"github.com/distcache/distcache/workload/history"
)

// Result is a run's overall finding.
type Result string

// Results.
const (
	// Pass: every key linearizable, every key read back, no write lost.
	Pass Result = "PASS"
	// Fail: a key's history is not linearizable or a write was lost.
	Fail Result = "FAIL"
	// Inconclusive: nothing wrong found, but a key was not checked in
	// time or not read back.
	Inconclusive Result = "INCONCLUSIVE"
)

// EndReason is what ended the timed workload.
type EndReason string

// End reasons.
const (
	// EndedAtDuration: the workload ran for Config.Duration.
	EndedAtDuration EndReason = "duration"
	// EndedAtMaxOps: the workload ran Config.MaxOps operations.
	EndedAtMaxOps EndReason = "max-ops"
	// EndedOnRequest: Checker.EndWorkload was called (distcache check:
	// SIGINT or SIGTERM).
	EndedOnRequest EndReason = "request"
)

// Phase is a part of a run.
type Phase string

// Phases, in order.
const (
	Preloading  Phase = "preload"
	Working     Phase = "workload"
	ReadingBack Phase = "read-back"
	Checking    Phase = "check"
)

// Progress is reported to Config.Progress.
type Progress struct {
	Phase Phase
	// Elapsed is the time since the workload started and Duration its
	// bound (during the workload).
	Elapsed, Duration time.Duration
	// Counts are the counts so far.
	Counts Counts
	// MapVersion is the newest partition map version seen.
	MapVersion int64
}

// Verdict is what a run found.
type Verdict struct {
	Result   Result    `json:"result"`
	Started  time.Time `json:"started"`
	Settings Settings  `json:"settings"`
	// Elapsed is how long the timed workload ran, and EndedBy what ended
	// it.
	Elapsed time.Duration `json:"elapsed"`
	EndedBy EndReason     `json:"endedBy"`
	Counts  Counts        `json:"counts"`
	// FirstMap and LastMap are the partition map versions at the start
	// and at the end of the run.
	FirstMap int64 `json:"firstMapVersion"`
	LastMap  int64 `json:"lastMapVersion"`
	// Stale lists when the stale clients were frozen and thawed.
	Stale []StaleEvent `json:"stale,omitempty"`
	// Linearizability is the per-key check of the whole history (preload,
	// workload and the routed read-back).
	Linearizability history.Result `json:"linearizability"`
	// Routed is the read-back through the cache; Direct the one straight
	// from Redis (nil when no Redis address is known).
	Routed ReadBack  `json:"routed"`
	Direct *ReadBack `json:"direct,omitempty"`
	// Histories are the files holding failing keys' histories, by key
	// (when Config.OutDir is set).
	Histories map[string]string `json:"histories,omitempty"`
}

// Pass reports whether the run passed.
func (v *Verdict) Pass() bool { return v.Result == Pass }

// decide sets v.Result from the findings.
func (v *Verdict) decide() {
	lin := &v.Linearizability
	switch {
	case len(lin.Violations) > 0 || v.Lost() > 0:
		v.Result = Fail
	case len(lin.Unchecked) > 0 || len(v.Routed.Unread) > 0 || (v.Direct != nil && len(v.Direct.Unread) > 0):
		v.Result = Inconclusive
	default:
		v.Result = Pass
	}
}

// Lost is the number of lost writes found by the read-backs (a key lost
// both ways counts twice).
func (v *Verdict) Lost() int {
	n := len(v.Routed.Lost)
	if v.Direct != nil {
		n += len(v.Direct.Lost)
	}
	return n
}

// Settings are the workload's parameters.
type Settings struct {
	// MapFile names where the map was followed: a file, or a ConfigMap
	// read through the Kubernetes API.
	MapFile      string        `json:"mapFile"`
	KeyPrefix    string        `json:"keyPrefix"`
	Keys         int           `json:"keys"`
	Skew         float64       `json:"skew"`
	WriteRatio   float64       `json:"writeRatio"`
	DeleteShare  float64       `json:"deleteShare"`
	Clients      int           `json:"clients"`
	StaleClients int           `json:"staleClients"`
	Workers      int           `json:"workers"`
	Seed         uint64        `json:"seed"`
	Rate         float64       `json:"rate,omitempty"`
	Duration     time.Duration `json:"duration"`
	MaxOps       int64         `json:"maxOps"`
	OpTimeout    time.Duration `json:"opTimeout"`
}

func settingsOf(c Config) Settings {
	return Settings{
		MapFile: c.mapSource().String(), KeyPrefix: c.KeyPrefix, Keys: c.Keys, Skew: c.Skew, WriteRatio: c.WriteRatio, DeleteShare: c.DeleteShare,
		Clients: c.Clients, StaleClients: c.StaleClients, Workers: c.Workers, Seed: c.Seed,
		Rate: c.Rate, Duration: c.Duration, MaxOps: c.MaxOps, OpTimeout: c.OpTimeout,
	}
}

// Counts count the operations of the timed workload (Preload counts the
// preload's writes).
type Counts struct {
	// Operations is the number of operations the workload ran.
	Operations int64 `json:"operations"`
	// Gets, Hits (served by a cache node), NotFound and FailedReads (no
	// answer: left out of the history).
	Gets        int64 `json:"gets"`
	Hits        int64 `json:"hits"`
	NotFound    int64 `json:"notFound"`
	FailedReads int64 `json:"failedReads"`
	// Puts and Deletes sent; Acknowledged of them; Refused with a
	// coherence timeout (not applied: left out); Unknown outcome (failed
	// otherwise or timed out: possibly applied), TimedOut of them with no
	// reply at all.
	Puts         int64 `json:"puts"`
	Deletes      int64 `json:"deletes"`
	Acknowledged int64 `json:"acknowledged"`
	Refused      int64 `json:"refusedCoherence"`
	Unknown      int64 `json:"outcomeUnknown"`
	TimedOut     int64 `json:"timedOut"`
	// Preload is the number of preload writes sent.
	Preload int64 `json:"preload"`
	// StorageReads and StorageWrites are the reads and writes the
	// clients sent to Redis themselves (direct reads and writes);
	// HeldWrites the writes Redis refused because a cache may hold the
	// key, which went through the shim.
	StorageReads  int64 `json:"storageReads,omitempty"`
	StorageWrites int64 `json:"storageWrites,omitempty"`
	HeldWrites    int64 `json:"heldWrites,omitempty"`
	// LeafReads are the workload's reads the clients sent through the
	// client leaf (client.Config.ClientLeaf); LeafFallbacks those the
	// leaf did not answer in time or answered with a refusal, which the
	// clients then read by their own choice.
	LeafReads     int64 `json:"leafReads,omitempty"`
	LeafFallbacks int64 `json:"leafFallbacks,omitempty"`
}

// StaleEvent is a freeze or thaw of the stale clients.
type StaleEvent struct {
	// At is the time since the run started.
	At time.Duration `json:"at"`
	// Frozen is true for a freeze, false for a thaw.
	Frozen bool `json:"frozen"`
	// StaleMap is the map version the stale clients had before the event,
	// CurrentMap the newest version the run had seen.
	StaleMap   int64 `json:"staleMapVersion"`
	CurrentMap int64 `json:"currentMapVersion"`
}

// ReadBack is what the final reads of one source found.
type ReadBack struct {
	// Read is the number of keys read.
	Read int `json:"read"`
	// Unread are the keys not read within the bound (or whose shard has
	// no known Redis address), sorted.
	Unread []string `json:"unread,omitempty"`
	// Lost are the keys whose value is not one their writes could have
	// left.
	Lost []history.LostWrite `json:"lost,omitempty"`
}

// Summary is the verdict in one line.
func (v *Verdict) Summary() string {
	c := &v.Counts
	lin := &v.Linearizability
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d operations (%d reads, %d writes, %d of unknown outcome) on %d keys",
		v.Result, c.Operations, c.Gets, c.Puts+c.Deletes, c.Unknown, v.Settings.Keys)
	var findings []string
	switch {
	case len(lin.Violations) > 0:
		findings = append(findings, plural(len(lin.Violations), "key", "keys")+" not linearizable")
	case len(lin.Unchecked) == 0:
		findings = append(findings, "linearizable")
	}
	if n := len(lin.Unchecked); n > 0 {
		findings = append(findings, plural(n, "key", "keys")+" unchecked (check timed out)")
	}
	sources := "through the cache"
	if v.Direct != nil {
		sources += " and in Redis"
	}
	if n := v.Lost(); n > 0 {
		findings = append(findings, plural(n, "lost write", "lost writes"))
	} else {
		findings = append(findings, "no lost write "+sources)
	}
	unread := len(v.Routed.Unread)
	if v.Direct != nil {
		unread += len(v.Direct.Unread)
	}
	if unread > 0 {
		findings = append(findings, plural(unread, "final read", "final reads")+" failed")
	}
	b.WriteString(": ")
	b.WriteString(strings.Join(findings, ", "))
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
