package main

import (
	"context"
	"syscall"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
)

// system is the cluster a mode's trials run against: a standalone cluster
// (cluster) or a CacheCluster on localkube (kubeSystem).
type system interface {
	// victims are the cache nodes the trials fault, in turn.
	victims(ctx context.Context) ([]string, error)
	// holdControlPlane takes the mode's control plane down for its trials
	// (nothing when it is on); release brings it back.
	holdControlPlane(ctx context.Context) (release func(context.Context) error, err error)
	// locate finds victim's process, and what waitHealed needs to tell
	// that it was restarted.
	locate(ctx context.Context, victim string) (victimProc, error)
	// signal sends sig to v's process, once it is sure the PID is v's.
	signal(v victimProc, sig syscall.Signal) error
	// down kills victim and holds it down; restart brings it back. It
	// calls atFault as soon as victim is down, which the trial counts as
	// the fault's time: an operation called after it cannot reach victim.
	down(ctx context.Context, victim string, atFault func()) (restart func(context.Context) error, err error)
	// faultWindow starts what the mode does for the span of each fault and
	// its observation (apiserver-off stops the API server); end undoes it.
	faultWindow(ctx context.Context) (end func(), err error)
	// waitHealed waits until the cluster has healed from v's fault at
	// fault, and p has caught up with the map; restarted says v's process
	// must be a new one. It returns v's member states in the map since the
	// fault and how long it waited.
	waitHealed(ctx context.Context, timeout time.Duration, v victimProc, restarted bool, fault time.Time, p *prober) (changes string, heal time.Duration, err error)
}

// victimProc is a victim's process as it was before the fault.
type victimProc struct {
	name string
	pid  int
	// restarts is its container's restart count, container its ID
	// (Kubernetes).
	restarts  int32
	container string
}

// access is how the prober and the check reach a mode's cluster.
type access struct {
	maps   mapwatch.Source
	keyDir string // the data-plane key's directory ("": none)
	listen string // the probe client's UDP address
	// checkArgs point `distcache check` at the cluster.
	checkArgs []string
	// mapPoll is how often the prober reads the map (besides a watch).
	mapPoll time.Duration
}
