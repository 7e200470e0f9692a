package standalone

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/controlloop"
	"github.com/distcache/distcache/standalone/faults"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/standalone/promsd"
	"github.com/distcache/distcache/standalone/supervisor"
)

// Defaults of Config.
const (
	DefaultStartTimeout = time.Minute
	DefaultStopTimeout  = 10 * time.Second
	DefaultScrapeEvery  = time.Second
	// DefaultStatusProbeInterval is the default period of the status's
	// health checks of every process: they only feed `distcache status`
	// (the control loop checks the cache nodes on its own, at
	// ProbeInterval), and dozens of processes checked several times a
	// second cost a visible share of a small machine.
	DefaultStatusProbeInterval = time.Second
)

// PIDFile is the file in the run directory that holds the pid of the
// process running the cluster.
const PIDFile = "distcache.pid"

// Config configures Run.
type Config struct {
	// Plan is the cluster laid out on this host.
	Plan *plan.Plan
	// RunDir holds the map, the logs, the control socket and the pid file.
	RunDir string
	// Policy is the control loop's failover policy (the spec's failover
	// section).
	Policy failover.Policy
	// ProbeInterval is the control loop's period (default
	// controlloop.DefaultInterval).
	ProbeInterval time.Duration
	// StatusProbeInterval is the period of the status's health checks of
	// every process (default DefaultStatusProbeInterval).
	StatusProbeInterval time.Duration
	// StartTimeout bounds the wait for every process to be ready (default
	// DefaultStartTimeout); StopTimeout the wait for them to exit on
	// SIGTERM before SIGKILL (default DefaultStopTimeout).
	StartTimeout, StopTimeout time.Duration
	// Logger receives the cluster's events (default: discarded).
	Logger *slog.Logger
	// Ready, when set, is called once every process is ready and the
	// control API serves.
	Ready func()
}

// Run starts the cluster and runs it until ctx ends or a shutdown request
// arrives, then stops every process. It returns an error if the cluster
// cannot start (every process started so far is stopped first).
func Run(ctx context.Context, cfg Config) (err error) {
	cfg = cfg.withDefaults()
	c := &cluster{
		cfg: cfg, prober: newHTTPProber(), started: time.Now(), phase: control.Starting,
		ready: map[string]bool{}, samples: map[string]sample{}, loads: map[string]float64{},
		slowed: map[string]time.Duration{}, delays: map[string]*faults.Delay{},
		shutdown: make(chan struct{}),
	}
	c.sup = supervisor.New(supervisor.Config{Logger: cfg.Logger})
	defer c.stop()
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		return fmt.Errorf("cannot create run directory: %w", err)
	}
	if err := ensureDataPlaneKey(cfg.Plan.DataPlaneKeyDir); err != nil {
		return err
	}
	if c.cpu, err = newCPUGroups(cfg.Plan); err != nil {
		return err
	}
	// The control API serves from the start: `distcache status` shows the
	// processes coming up, and `distcache down` stops a start that hangs.
	srv, err := control.Listen(cfg.RunDir, c, cfg.Logger)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Close(context.Background()) }()
	if cfg.Plan.MetricsAddr != "" {
		ms, err := c.serveMetrics()
		if err != nil {
			return err
		}
		defer func() { _ = ms.Close(context.Background()) }()
	}
	if err := os.WriteFile(filepath.Join(cfg.RunDir, PIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("cannot write the pid file: %w", err)
	}
	defer os.Remove(filepath.Join(cfg.RunDir, PIDFile))
	if started, err := c.startUnlessShutdown(ctx); !started {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { spread(runCtx, DefaultScrapeEvery, c.scrapedProcesses(), c.scrapeInBackground) })
	wg.Go(func() { spread(runCtx, cfg.StatusProbeInterval, cfg.Plan.Processes, c.probeInBackground) })
	defer wg.Wait()
	defer cancel()

	c.cfg.Logger.Info("cluster ready", "cluster", cfg.Plan.Cluster.Name, "processes", len(cfg.Plan.Processes),
		"run_dir", cfg.RunDir, "map", cfg.Plan.MapFile)
	if cfg.Ready != nil {
		cfg.Ready()
	}
	select {
	case <-ctx.Done():
	case <-c.shutdown:
	}
	c.cfg.Logger.Info("stopping cluster", "cluster", cfg.Plan.Cluster.Name)
	return nil
}

func (cfg Config) withDefaults() Config {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = DefaultStopTimeout
	}
	if cfg.StatusProbeInterval <= 0 {
		cfg.StatusProbeInterval = DefaultStatusProbeInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// cluster is a running standalone cluster; it is the control API's
// backend.
type cluster struct {
	cfg     Config
	sup     *supervisor.Supervisor
	cpu     *cpuGroups // nil without Plan.ServerCPU
	prober  *httpProber
	started time.Time

	mu       sync.Mutex               // guards the fields below
	maps     *mapwatch.Watcher        // the published map; nil while starting
	phase    control.Phase            // Starting until every process was ready once
	ready    map[string]bool          // by process name, as last probed
	samples  map[string]sample        // last scrape by process name
	loads    map[string]float64       // work units per second between a process's last two scrapes
	slowed   map[string]time.Duration // delays of slowed processes, for the status
	stopping bool

	// slowMu serializes Slow, Unslow and their removal at the end (each
	// runs iptables and may wait for held datagrams); it guards delays
	// and slowClosed.
	slowMu     sync.Mutex
	delays     map[string]*faults.Delay // by process name
	slowClosed bool                     // the cluster is stopping: no new delays

	shutdownOnce sync.Once
	shutdown     chan struct{} // closed by Shutdown
}

// startUnlessShutdown runs start, which a shutdown request cancels. It
// reports whether the cluster started; if not, the error of start, or nil
// after a shutdown request (Run then stops what was started).
func (c *cluster) startUnlessShutdown(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := c.start(ctx)
	select {
	case <-c.shutdown:
		c.cfg.Logger.Info("shutdown requested while starting", "cluster", c.cfg.Plan.Cluster.Name)
		return false, nil
	default:
		return err == nil, err
	}
}

// start publishes map version 1, writes the control loop's configuration,
// starts every process in plan order and waits until each group is ready:
// Redis servers, then shims, then nodes, then the control loop, then the
// gateway (its /healthz, as every distcache role's: plain HTTP on its
// metrics address, also when it serves Redis clients over TLS and requires
// AUTH), then Prometheus.
func (c *cluster) start(ctx context.Context) error {
	p := c.cfg.Plan
	if err := mapwatch.WriteFile(p.MapFile, p.Map); err != nil {
		return err
	}
	if p.TargetsFile != "" {
		if err := promsd.Write(p); err != nil {
			return err
		}
	}
	if p.PrometheusConfig != "" {
		if err := promsd.WriteConfig(p); err != nil {
			return err
		}
	}
	// Events of an earlier run refer to maps that are gone.
	if err := os.Remove(p.EventsFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot clear the events of an earlier run: %w", err)
	}
	if err := controlloop.WriteConfig(p.ControlLoopConfig, c.loopConfig()); err != nil {
		return err
	}
	if err := writeACLFiles(p); err != nil {
		return err
	}
	maps, err := mapwatch.Load(p.MapFile, c.cfg.Logger)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	// A switch or client leaf is ready once the fabric controller,
	// started with it, has programmed it.
	for _, kinds := range [][]plan.Kind{{plan.Redis}, {plan.Shim}, {plan.Node}, {plan.Switch, plan.ClientLeaf, plan.Fabric}, {plan.ControlLoop}, {plan.Gateway}, {plan.Prometheus}} {
		var group []plan.Process
		for _, pr := range p.Processes {
			if slices.Contains(kinds, pr.Kind) {
				group = append(group, pr)
			}
		}
		for _, pr := range group {
			spec := supervisor.Spec{Name: pr.Name, Path: pr.Path, Args: pr.Args, Dir: pr.Dir, LogFile: pr.LogFile, Env: pr.Env, Join: c.cpu.join(pr)}
			if err := c.sup.Start(spec); err != nil {
				return err
			}
		}
		if err := c.waitReady(ctx, group); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.maps, c.phase = maps, control.Ready
	c.mu.Unlock()
	return nil
}

// loopConfig is the control loop's configuration: the plan's files, the
// policy and period, and every cache node's health and data-plane
// addresses.
func (c *cluster) loopConfig() controlloop.FileConfig {
	p := c.cfg.Plan
	lc := controlloop.FileConfig{
		MapFile: p.MapFile, EventsFile: p.EventsFile, Interval: controlloop.Duration(c.cfg.ProbeInterval),
		Policy: controlloop.PolicyOf(c.cfg.Policy),
	}
	for _, pr := range p.Processes {
		if pr.Kind == plan.Node || pr.Kind == plan.Switch {
			lc.Members = append(lc.Members, controlloop.MemberConfig{Name: pr.Name, HealthAddr: pr.MetricsAddr, DataAddr: pr.Addr})
		}
	}
	lc.Copies = copiesConfig(p)
	lc.Sizing = sizingConfig(p)
	return lc
}

// copiesConfig is the control loop's decision of copies for plan p, nil
// unless spec.hotKeys.replication enables it: the spec's policy, with the
// plan's emulated capacities for those it leaves unset, and every shim's
// metrics server.
func copiesConfig(p *plan.Plan) *controlloop.CopiesFileConfig {
	policy, ok := p.Cluster.Copies(p.NodeRate, p.ShardRate)
	if !ok {
		return nil
	}
	c := policy.Plan
	cc := &controlloop.CopiesFileConfig{
		Interval: controlloop.Duration(policy.Interval), NodeCapacity: c.NodeCapacity, ServerCapacity: c.ServerCapacity,
		Slots: c.Slots, MaxCopies: c.MaxCopies, MinRate: c.MinRate, CoherenceCost: c.CoherenceCost,
		Hysteresis: c.Hysteresis, Headroom: c.Headroom,
	}
	for _, pr := range p.Processes {
		if pr.Kind == plan.Shim {
			cc.Shards = append(cc.Shards, controlloop.ShardConfig{Name: pr.Shard, MetricsAddr: pr.MetricsAddr})
		}
	}
	return cc
}

// sizingConfig is the control loop's split of the cache budget for plan
// p, nil unless spec.cacheBudget sizes some layer.
func sizingConfig(p *plan.Plan) *controlloop.SizingFileConfig {
	policy, ok := p.Cluster.Sizing()
	if !ok {
		return nil
	}
	c := policy.Plan
	return &controlloop.SizingFileConfig{Interval: controlloop.Duration(policy.Interval), Budget: c.Budget, Layers: c.Layers, Start: c.Start, Hysteresis: c.Hysteresis}
}

// waitReady polls the group's processes until all are ready.
func (c *cluster) waitReady(ctx context.Context, group []plan.Process) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		var notReady []string
		for _, pr := range group {
			if !c.probe(ctx, pr) {
				notReady = append(notReady, pr.Name)
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot start the cluster: not ready after %v: %v (see their logs in %s): %w",
				c.cfg.StartTimeout, notReady, filepath.Join(c.cfg.RunDir, "logs"), ctx.Err())
		case <-t.C:
		}
	}
}

// probe checks pr now and records the result.
func (c *cluster) probe(ctx context.Context, pr plan.Process) bool {
	ready := false
	if st, err := c.sup.StatusOf(pr.Name); err == nil && st.State == supervisor.Running {
		switch pr.Kind {
		case plan.Redis:
			ready = listening(ctx, pr.Addr)
		case plan.Prometheus:
			ready = c.prober.ok(ctx, pr.Addr, "/-/ready")
		default:
			ready = c.prober.ok(ctx, pr.MetricsAddr, "/healthz")
		}
	}
	c.mu.Lock()
	c.ready[pr.Name] = ready
	c.mu.Unlock()
	return ready
}

// stop removes every delay of a slowed process, then stops every process,
// the control loop first: it would otherwise see the cache nodes go and
// fence them, publishing map versions for a cluster that is shutting down.
func (c *cluster) stop() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	c.unslowAll()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StopTimeout)
	defer cancel()
	var loops []string
	for _, pr := range c.cfg.Plan.Processes {
		if pr.Kind == plan.ControlLoop {
			loops = append(loops, pr.Name)
		}
	}
	c.sup.Stop(ctx, loops...)
	if err := c.cpu.remove(); err != nil {
		c.cfg.Logger.Warn("CPU groups left behind", "err", err)
	}
}

// probeInBackground probes pr for the status: a shard whose Redis died
// shows as not ready (its shim's health check pings Redis), and so does a
// stopped cache node or control loop. The control loop probes the cache
// nodes on its own to fail them over.
func (c *cluster) probeInBackground(ctx context.Context, pr plan.Process) { c.probe(ctx, pr) }

// scrapeInBackground scrapes pr's load for the status.
func (c *cluster) scrapeInBackground(ctx context.Context, pr plan.Process) {
	if err := c.scrapeOne(ctx, pr); err != nil && ctx.Err() == nil {
		c.cfg.Logger.Debug("cannot scrape a process", "err", err)
	}
}
