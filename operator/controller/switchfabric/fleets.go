package switchfabric

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/distcache/distcache/dataplane/kubemap"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/fleet"
	"github.com/distcache/distcache/layout"
)

// running is a fabric's fleet at work.
type running struct {
	key     string // the binding it programs (binding.key)
	binding *binding
	fleet   *fleet.Fleet
	runners map[string]fleet.Runner // by switch name
	upgrade sync.Mutex              // one upgrade at a time; guards build
	build   *loaded                 // the build the switches get (upgrade.go)
	cancel  context.CancelFunc
	done    chan struct{}

	metrics   prometheus.Registerer // where collector is registered; nil: nowhere
	collector prometheus.Collector
}

func (rn *running) stop() {
	rn.cancel()
	<-rn.done
	if rn.metrics != nil {
		rn.metrics.Unregister(rn.collector)
	}
}

// fleets are this replica's running fleets, by fabric, and whether it
// leads the operator's replicas.
type fleets struct {
	mu       sync.Mutex // guards byFabric, leader, closed
	byFabric map[types.NamespacedName]*running
	leader   bool
	closed   bool // stopAll ran: the manager stops, no fleet starts
}

// ensure returns fabric's fleet programming b: the running one if it
// does, else a new one from start, the old one stopped first.
func (fs *fleets) ensure(fabric types.NamespacedName, b *binding, start func(types.NamespacedName, *binding, bool) (*running, error)) (*running, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	key := b.key()
	cur := fs.byFabric[fabric]
	if cur != nil && cur.key == key {
		return cur, nil
	}
	if cur != nil {
		cur.stop()
		delete(fs.byFabric, fabric)
	}
	if fs.closed {
		return nil, fmt.Errorf("cannot program fabric %s: the operator is stopping", fabric)
	}
	rn, err := start(fabric, b, fs.leader)
	if err != nil {
		return nil, err
	}
	rn.key = key
	if fs.byFabric == nil {
		fs.byFabric = map[types.NamespacedName]*running{}
	}
	fs.byFabric[fabric] = rn
	return rn, nil
}

// current is fabric's running fleet, or nil.
func (fs *fleets) current(fabric types.NamespacedName) *running {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.byFabric[fabric]
}

// get is fabric's running fleet if it programs b, else nil.
func (fs *fleets) get(fabric types.NamespacedName, b *binding) *running {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if cur := fs.byFabric[fabric]; cur != nil && cur.key == b.key() {
		return cur
	}
	return nil
}

// leading says whether this replica leads.
func (fs *fleets) leading() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.leader
}

// lead makes this replica the leader: every fleet's runners claim their
// switches (cacheswitch.Runner.SetLeader), and so do those started later.
func (fs *fleets) lead() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.leader = true
	for _, rn := range fs.byFabric {
		rn.fleet.SetLeader(true)
	}
}

// stop stops fabric's fleet, if one runs.
func (fs *fleets) stop(fabric types.NamespacedName) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if cur := fs.byFabric[fabric]; cur != nil {
		cur.stop()
		delete(fs.byFabric, fabric)
	}
}

// stopAll stops every fleet, for good.
func (fs *fleets) stopAll() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.closed = true
	for k, rn := range fs.byFabric {
		rn.stop()
		delete(fs.byFabric, k)
	}
}

// start runs a fleet for b: a runner per switch (the stratum driver)
// and the renewals from the cluster's partition map; leader says this
// replica leads.
func (r *Reconciler) start(fabric types.NamespacedName, b *binding, leader bool) (*running, error) {
	lg := slog.New(logr.ToSlogHandler(ctrl.Log.WithName("switchfabric").WithValues("switchfabric", fabric.String())))
	build := *b.build
	build.since = time.Now()
	rn := &running{binding: b, build: &build, runners: map[string]fleet.Runner{}, done: make(chan struct{})}
	switches := make([]fleet.Switch, 0, len(b.Switches))
	for _, sm := range b.Switches {
		switches = append(switches, fleet.Switch{Member: sm.Member, P4Runtime: sm.Switch.P4RuntimeAddress,
			DeviceID: uint64(sm.Switch.DeviceID), GNMI: sm.Switch.GNMIAddress})
	}
	leaves, leafInfo, err := clientLeafSwitches(b)
	if err != nil {
		return nil, err
	}
	switches = append(switches, leaves...)
	var runners []fleet.Runner
	rn.fleet, runners = fleet.Build(switches, fleet.Config{ClientLeafInfo: leafInfo,
		Pipeline: build.p,
		Controller: cacheswitch.Config{Lease: b.Programming.Lease,
			Capacity: b.Programming.Capacity, HotThreshold: b.Programming.HotThreshold},
		Interval: b.Programming.Interval, ElectionID: b.ElectionID, Leader: leader, TLS: b.tls,
		OnChange: func(cacheswitch.State) { r.notify(fabric.Namespace, fabric.Name) },
		Logger:   lg,
	})
	for i, sm := range b.Switches {
		rn.runners[sm.Switch.Name] = runners[i]
	}
	for i, cl := range b.ClientLeaves {
		rn.runners[cl.Switch.Name] = runners[len(b.Switches)+i]
	}
	if r.Metrics != nil {
		c := rn.fleet.Collector(prometheus.Labels{"namespace": fabric.Namespace, "cluster": b.Cluster, "switchfabric": fabric.Name})
		if err := r.Metrics.Register(c); err != nil {
			return nil, fmt.Errorf("cannot export the metrics of fabric %s: %w", fabric, err)
		}
		rn.metrics, rn.collector = r.Metrics, c
	}
	ctx, cancel := context.WithCancel(context.Background())
	rn.cancel = cancel
	var wg sync.WaitGroup
	wg.Go(func() { rn.fleet.Run(ctx) })
	wg.Go(func() { renewFromMap(ctx, r.Config, fabric.Namespace, b, rn.fleet, lg) })
	go func() { wg.Wait(); close(rn.done) }()
	lg.Info("programming the fabric's switches", "cluster", b.Cluster, "switches", len(b.Switches), "program", b.Program,
		"pipeline_source", build.source, "cookie", build.p.CookieHex(), "device_config_bytes", len(build.p.DeviceConfig))
	return rn, nil
}

// renewFromMap reads the cluster's partition map through the API and
// hands every read to the fleet, which renews the switches' leases from
// the read's start as a cache node does; it waits for a map not yet
// published.
func renewFromMap(ctx context.Context, cfg *rest.Config, ns string, b *binding, f *fleet.Fleet, log *slog.Logger) {
	poll := layout.LeaseMapPoll(b.Programming.Lease, mapwatch.DefaultInterval)
	src, err := kubemap.New(cfg, ns, b.MapRef, kubemap.WithLogger(log))
	if err != nil {
		log.Error("cannot read the partition map: the switches get no lease", "configmap", b.MapRef, "err", err)
		return
	}
	for ctx.Err() == nil {
		w, err := mapwatch.Open(ctx, src, log)
		if err != nil {
			log.Info("waiting for the partition map", "configmap", b.MapRef, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
			continue
		}
		f.Follow(ctx, w, poll)
		return
	}
}
