// Package schedule draws the fault schedules of the fault-injection suite
// (test/fault): a cluster file and a timed list of faults, reproducible
// from a seed. A schedule names its targets by process name (cache
// members, storage shards and their Redis servers) and its network faults
// by the link they cut (node and shim, client and node, node and control
// loop, client and shim); the suite resolves names to PIDs and ports on the
// running cluster.
//
// Every fault starts after Config.Start and ends by Config.HealBy, so the
// checker's final read-back runs on a healed cluster.
package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Class is a kind of fault.
type Class string

// Fault classes.
const (
	KillNode  Class = "kill-node"  // SIGKILL of a cache node (the supervisor restarts it)
	PauseNode Class = "pause-node" // SIGSTOP, then SIGCONT, of a cache node
	KillShim  Class = "kill-shim"
	PauseShim Class = "pause-shim"
	KillRedis Class = "kill-redis"
	PauseRed  Class = "pause-redis"
	// ControlLoop stops the control loop: SIGKILL of its process when it
	// runs as one, else SIGSTOP/SIGCONT of the cluster's daemon.
	ControlLoop     Class = "control-loop"
	Drop            Class = "drop"              // probabilistic loss on a link, both ways
	Delay           Class = "delay"             // every packet of a link delayed, both ways
	PartitionOneWay Class = "partition-one-way" // a link cut in one direction
	PartitionTwoWay Class = "partition-two-way" // a link cut both ways
	// StaleClients freezes the partition map of the checker's stale
	// clients (SIGUSR1) and thaws it (SIGUSR2).
	StaleClients Class = "stale-clients"
	// GraceBurst is several cache nodes killed or paused inside one
	// failover grace period (its faults have their own classes).
	GraceBurst Class = "grace-burst"
)

// Classes are every class, in a fixed order.
var Classes = []Class{
	KillNode, PauseNode, KillShim, PauseShim, KillRedis, PauseRed, ControlLoop,
	Drop, Delay, PartitionOneWay, PartitionTwoWay, StaleClients, GraceBurst,
}

// Link is which processes a network fault is between.
type Link string

// Links.
const (
	NodeShim Link = "node-shim" // a cache node's and a shim's data-plane UDP
	// ClientNode is the checker's clients and a cache node (the clients'
	// ports are every port that is no process's).
	ClientNode Link = "client-node"
	// NodeControl is a cache node's metrics port (TCP), where the control
	// loop probes its health: the node keeps serving clients.
	NodeControl Link = "node-control"
	ClientShim  Link = "client-shim" // the clients and a shim (writes, misses of bypassing reads)
)

// Links are every link.
var Links = []Link{NodeShim, ClientNode, NodeControl, ClientShim}

// Fault is one fault of a schedule.
type Fault struct {
	Class Class `json:"class"`
	// At is when it starts, from the start of the timed workload; For how
	// long it lasts (0 for a kill, which is instant).
	At  time.Duration `json:"at"`
	For time.Duration `json:"for"`
	// Targets are the processes hit: one process for process faults; for
	// network faults the node and/or shim of the link, in the direction
	// of a one-way partition (From → To) where it matters.
	Targets []string `json:"targets,omitempty"`
	// Link is the link of a network fault; Reverse, for a one-way
	// partition, cuts the second endpoint's packets to the first instead.
	Link    Link `json:"link,omitempty"`
	Reverse bool `json:"reverse,omitempty"`
	// Probability is a drop's loss rate; Delay a delay's.
	Probability float64       `json:"probability,omitempty"`
	Delay       time.Duration `json:"delay,omitempty"`
	// Burst numbers the grace bursts of a schedule from 1: the faults of
	// one burst share it (0: not part of a burst).
	Burst int `json:"burst,omitempty"`
}

// End is when the fault is healed.
func (f Fault) End() time.Duration { return f.At + f.For }

func (f Fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6.2fs %-17s", f.At.Seconds(), f.Class)
	if f.For > 0 {
		fmt.Fprintf(&b, " for %.2fs", f.For.Seconds())
	}
	if f.Link != "" {
		fmt.Fprintf(&b, " %s", f.Link)
		if f.Reverse {
			b.WriteString(" (reverse)")
		}
	}
	if len(f.Targets) > 0 {
		fmt.Fprintf(&b, " %s", strings.Join(f.Targets, ","))
	}
	switch {
	case f.Probability > 0:
		fmt.Fprintf(&b, " p=%.2f", f.Probability)
	case f.Delay > 0:
		fmt.Fprintf(&b, " +%v", f.Delay)
	}
	if f.Burst > 0 {
		fmt.Fprintf(&b, " [burst %d]", f.Burst)
	}
	return b.String()
}

// Cluster is a cluster file and the names of its processes.
type Cluster struct {
	// File is the cluster file's path.
	File string `json:"file"`
	// Nodes are the cache members; Shards the storage shards (a shard's
	// shim has its name, its Redis the name + "-redis").
	Nodes  []string `json:"nodes"`
	Shards []string `json:"shards"`
}

// RedisName is the process name of a shard's redis-server.
func RedisName(shard string) string { return shard + "-redis" }

// Config is what a schedule is drawn from.
type Config struct {
	// Seed makes the schedule: the same Config gives the same schedule.
	Seed uint64
	// Clusters are the cluster files to choose from.
	Clusters []Cluster
	// Classes are the fault classes to draw from (default: Classes).
	Classes []Class
	// Faults bounds how many classes are drawn per schedule (default 3;
	// at least 1 is drawn; a grace burst adds several faults).
	Faults int
	// Start and HealBy bound every fault (from the start of the workload).
	Start, HealBy time.Duration
	// Grace is the clusters' failover grace period.
	Grace time.Duration
}

// Schedule is a cluster file and the faults injected into it.
type Schedule struct {
	Seed    uint64  `json:"seed"`
	Cluster Cluster `json:"cluster"`
	// HealBy is when every fault is healed.
	HealBy time.Duration `json:"healBy"`
	// Faults in order of At.
	Faults []Fault `json:"faults"`
}

func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, cluster %s, %d faults, healed by %v\n", s.Seed, s.Cluster.File, len(s.Faults), s.HealBy)
	for _, f := range s.Faults {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}

// Generate draws a schedule from cfg.
func Generate(cfg Config) (Schedule, error) {
	if len(cfg.Clusters) == 0 {
		return Schedule{}, fmt.Errorf("cannot draw a schedule: no cluster")
	}
	if cfg.HealBy <= cfg.Start+time.Second {
		return Schedule{}, fmt.Errorf("cannot draw a schedule: faults must fit in [%v, %v], at least 1s", cfg.Start, cfg.HealBy)
	}
	if cfg.Grace <= 0 {
		return Schedule{}, fmt.Errorf("cannot draw a schedule: no failover grace period")
	}
	classes := cfg.Classes
	if len(classes) == 0 {
		classes = Classes
	}
	n := cfg.Faults
	if n <= 0 {
		n = 3
	}
	g := &gen{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x64697374_63616368))}
	c := cfg.Clusters[g.rng.IntN(len(cfg.Clusters))]
	if len(c.Nodes) == 0 || len(c.Shards) == 0 {
		return Schedule{}, fmt.Errorf("cannot draw a schedule: cluster %s has no nodes or no shards", c.File)
	}
	g.c = c
	s := Schedule{Seed: cfg.Seed, Cluster: c, HealBy: cfg.HealBy}
	for range 1 + g.rng.IntN(n) {
		s.Faults = append(s.Faults, g.draw(classes[g.rng.IntN(len(classes))])...)
	}
	for i := range s.Faults {
		f := &s.Faults[i]
		f.At = min(f.At, cfg.HealBy)
		f.For = min(f.For, cfg.HealBy-f.At)
	}
	slices.SortStableFunc(s.Faults, func(a, b Fault) int { return int(a.At - b.At) })
	return s, nil
}

// gen draws faults for one schedule.
type gen struct {
	cfg Config
	c   Cluster
	rng *rand.Rand
	// bursts is how many grace bursts were drawn.
	bursts int
}

// draw draws the faults of one class.
func (g *gen) draw(c Class) []Fault {
	grace := g.cfg.Grace
	switch c {
	case KillNode:
		return []Fault{g.timed(Fault{Class: c, Targets: []string{g.node()}}, 0, 0)}
	case PauseNode:
		// Half of the pauses end inside the grace period (no remap), half
		// well past it (the node is failed over while it sleeps).
		return []Fault{g.timed(Fault{Class: c, Targets: []string{g.node()}}, grace/4, 3*grace)}
	case KillShim:
		return []Fault{g.timed(Fault{Class: c, Targets: []string{g.shard()}}, 0, 0)}
	case PauseShim:
		return []Fault{g.timed(Fault{Class: c, Targets: []string{g.shard()}}, 200*time.Millisecond, 2*time.Second)}
	case KillRedis:
		return []Fault{g.timed(Fault{Class: c, Targets: []string{RedisName(g.shard())}}, 0, 0)}
	case PauseRed:
		return []Fault{g.timed(Fault{Class: c, Targets: []string{RedisName(g.shard())}}, 200*time.Millisecond, 2*time.Second)}
	case ControlLoop:
		return []Fault{g.timed(Fault{Class: c}, 500*time.Millisecond, 3*time.Second)}
	case Drop:
		f := g.link(Fault{Class: c})
		f.Probability = 0.1 + 0.4*g.rng.Float64()
		return []Fault{g.timed(f, time.Second, 4*time.Second)}
	case Delay:
		f := g.link(Fault{Class: c})
		f.Delay = time.Duration(20+g.rng.IntN(281)) * time.Millisecond
		return []Fault{g.timed(f, time.Second, 4*time.Second)}
	case PartitionOneWay:
		f := g.link(Fault{Class: c})
		f.Reverse = g.rng.IntN(2) == 1
		return []Fault{g.timed(f, 500*time.Millisecond, 4*time.Second)}
	case PartitionTwoWay:
		return []Fault{g.timed(g.link(Fault{Class: c}), 500*time.Millisecond, 4*time.Second)}
	case StaleClients:
		return []Fault{g.timed(Fault{Class: c}, time.Second, 4*time.Second)}
	case GraceBurst:
		return g.burst()
	default:
		panic("schedule: unknown class " + string(c))
	}
}

// burst is two or three different cache nodes killed or paused within one
// grace period; the pauses last past it.
func (g *gen) burst() []Fault {
	grace := g.cfg.Grace
	g.bursts++
	k := min(2+g.rng.IntN(2), len(g.c.Nodes))
	nodes := slices.Clone(g.c.Nodes)
	g.rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	longest := 2 * grace
	first := g.at(grace + longest)
	faults := make([]Fault, k)
	for i := range k {
		f := Fault{Class: PauseNode, Targets: []string{nodes[i]}, Burst: g.bursts,
			At: first + time.Duration(g.rng.Int64N(int64(grace)))}
		if g.rng.IntN(3) == 0 {
			f.Class = KillNode
		} else {
			f.For = grace + time.Duration(g.rng.Int64N(int64(grace)))
		}
		faults[i] = f
	}
	return faults
}

// timed gives f a duration in [lo, hi] (0 for an instant fault) and a
// start such that it ends by HealBy.
func (g *gen) timed(f Fault, lo, hi time.Duration) Fault {
	room := g.cfg.HealBy - g.cfg.Start
	if hi > 0 {
		hi = min(hi, room-time.Millisecond)
		lo = min(lo, hi)
		f.For = lo + time.Duration(g.rng.Int64N(int64(hi-lo)+1))
	}
	f.At = g.at(f.For)
	return f
}

// at draws a start for a fault lasting d.
func (g *gen) at(d time.Duration) time.Duration {
	latest := g.cfg.HealBy - d - g.cfg.Start
	if latest <= 0 {
		return g.cfg.Start
	}
	return g.cfg.Start + time.Duration(g.rng.Int64N(int64(latest)+1))
}

// link draws a link and its endpoints for a network fault.
func (g *gen) link(f Fault) Fault {
	f.Link = Links[g.rng.IntN(len(Links))]
	switch f.Link {
	case NodeShim:
		f.Targets = []string{g.node(), g.shard()}
	case ClientNode, NodeControl:
		f.Targets = []string{g.node()}
	case ClientShim:
		f.Targets = []string{g.shard()}
	}
	return f
}

func (g *gen) node() string  { return g.c.Nodes[g.rng.IntN(len(g.c.Nodes))] }
func (g *gen) shard() string { return g.c.Shards[g.rng.IntN(len(g.c.Shards))] }
