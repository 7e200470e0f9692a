package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/sim"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/workload/driver"
	"github.com/distcache/distcache/workload/report"
)

// benchOptions are the flags of `distcache bench`.
type benchOptions struct {
	ref       clusterRef
	maps      mapSourceFlags
	key       dataKey
	listen    string
	cfg       driver.Config
	modes     []string
	failNode  string
	failMode  string
	slowDelay time.Duration // of --fail-mode slow
	downFor   time.Duration
	shiftAt   time.Duration // --shift-at
	out       string
	jsonPath  string
	predict   bool
	via       string
	// twemproxyServers are the Redis servers of mode twemproxy when not
	// the cluster's own (--twemproxy-servers).
	twemproxyServers []string
}

func newBenchCommand() *cobra.Command { return benchCommand(&benchOptions{}) }

// benchCommand is the command that parses its flags into o.
func benchCommand(o *benchOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Drive a cluster with a Zipf workload: NoCache vs DistCache throughput, loads, hit ratios, latency, failures",
		Long: `bench drives a DistCache cluster through the client library with a Zipf
workload, first with caching off (NoCache: every read goes to its storage
shard), then with DistCache's routing over the cache layers, and reports for
each: throughput normalized to one storage server, per-node and per-shard
load, imbalance (max/mean), hit ratio per layer, p50/p99 latency and
coherence operations; a final check reads back every written key.

Throughput is the rate at which the busiest node or shard reaches its
capacity, as in the DistCache paper and 'distcache sim': the offered rate
divided by the highest utilisation measured. On a standalone cluster started
with --shard-capacity those capacities are emulated by rate limits (paper
§6.1), and the report says so; the simulator's prediction for the same map
and workload is shown next to the measurement.

--fail-node NAME@T fails that cache node T into DistCache's measured window
and recovers it --down-for later; the report shows the throughput timeline
(the paper's fig. 11). --fail-mode says how it fails:

  kill   SIGKILL, then a restart with an empty cache (a crash; the default)
  pause  SIGSTOP, then SIGCONT: it hangs with its sockets, cache and queued
         requests, and answers them late once continued
  slow   every UDP datagram its data-plane socket sends (replies, requests
         to the shims) is held --slow-delay before it leaves: a node that
         answers everything, slowly (a gray failure). The cluster's own
         process delays them on the host's loopback (NFQUEUE), which needs
         it to run as root with iptables-legacy (make iptables).

--shift-at T shifts the hot set T into DistCache's measured window (the
clock of --fail-node; T must be under --duration): every operation issued
from then on maps its Zipf rank to a key by a second permutation (seeded
from --seed), so the hot keys turn cold and as many others turn hot, with
the same skew, for experiments on how the caches adapt. The hottest
--preload keys of both permutations are written before the runs, and the
report says when the hot set shifted, with the throughput and hit ratios
before and after, per timeline interval, and marks it on the timeline.`,
		Example: `  distcache bench --run-dir out/demo/run --write-ratio 0.05 --fail-node demo-spine-1@8s --out out/demo
  distcache bench --run-dir out/demo/run --fail-node demo-spine-1@8s --fail-mode slow --slow-delay 50ms
  distcache bench --run-dir out/demo/run --duration 20s --shift-at 10s --out out/shift
  distcache bench --map /path/to/map.json --rate 5000 --modes distcache
  distcache bench --map-configmap shop/shop-partition-map --rate 5000 --modes distcache   # in a pod, or with --kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.ref.addFlags(cmd, "the cluster's YAML files (to find a standalone cluster by its name)")
	o.key.addFlag(cmd)
	f := cmd.Flags()
	c := &o.cfg
	o.maps.addFlags(cmd, "partition map file of a cluster that is not a local standalone one (needs --rate; no load tables)", false)
	f.StringVar(&o.listen, "listen", "", "UDP address of the clients (default 127.0.0.1:0 with a standalone cluster, 0.0.0.0:0 with --map or --map-configmap, as in a pod)")
	f.Uint64Var(&c.Keys, "keys", driver.DefaultKeys, "key space size")
	f.Var(addrPortValue{&c.Client.ClientLeaf}, "client-leaf", clientLeafHelp)
	f.Float64Var(&c.Skew, "skew", driver.DefaultSkew, "Zipf exponent (0: uniform)")
	f.IntVar(&c.ValueSize, "value-size", driver.DefaultValueSize, "written value size in bytes")
	f.Float64Var(&c.WriteRatio, "write-ratio", 0, "share of operations that are writes")
	f.DurationVar(&c.Duration, "duration", driver.DefaultDuration, "measured window per mode")
	f.Uint64Var(&c.Count, "count", 0, "end a mode's window after this many operations (0: by --duration only)")
	f.IntVar(&c.Concurrency, "concurrency", driver.DefaultConcurrency, "operations outstanding at most")
	f.IntVar(&c.Clients, "clients", driver.DefaultClients, "client instances (UDP sockets) per mode")
	f.Float64Var(&c.Rate, "rate", 0, "offered operations per second (0: probe each mode's capacity; needs emulated capacities)")
	f.IntVar(&c.Preload, "preload", 10000, "hottest keys written before the runs")
	f.DurationVar(&c.Warmup, "warmup", 8*time.Second, "unmeasured load before DistCache's window, for the caches to fill")
	f.StringSliceVar(&o.modes, "modes", []string{string(driver.NoCache), string(driver.DistCache)},
		"modes to run: nocache, distcache, twemproxy (nutcracker in front of the cluster's Redis servers, on keys of its own)")
	f.StringSliceVar(&o.twemproxyServers, "twemproxy-servers", nil,
		"Redis servers (host:port) mode twemproxy fronts instead of the cluster's own, e.g. as many as the cluster has servers, each with the same CPU limit (make bench-real-cpu)")
	f.StringVar(&o.via, "via", viaClient, "what nocache's and distcache's operations go through: client (the client library) or gateway (Redis clients of a distcache gateway per client, in this process)")
	f.StringVar(&o.failNode, "fail-node", "", "NAME@T: fail cache node NAME T into DistCache's window (see --fail-mode), recover it --down-for later")
	f.StringVar(&o.failMode, "fail-mode", string(driver.FailKill), "how --fail-node fails the node: kill (SIGKILL, then restart), pause (SIGSTOP, then SIGCONT) or slow (delay every datagram it sends by --slow-delay)")
	f.DurationVar(&o.slowDelay, "slow-delay", 100*time.Millisecond, "delay of every data-plane datagram a node failed with --fail-mode slow sends")
	f.DurationVar(&o.downFor, "down-for", 5*time.Second, "how long --fail-node keeps the node failed")
	f.DurationVar(&o.shiftAt, "shift-at", 0, "shift the hot set this long into DistCache's measured window (under --duration): ranks map to keys by a second permutation from then on (0: never)")
	f.IntVar(&c.HotRacks, "hot-racks", 0, "put the hot set on the storage of the first N racks: keys stored there take the lowest Zipf ranks (0: every rack; no prediction)")
	f.Float64Var(&c.ServerCapacity, "server-capacity", 0, "one storage server's capacity in work units/s, the unit of normalized throughput (default: the emulated one)")
	f.Uint64Var(&c.Seed, "seed", 1, "seed of the key permutation (as the simulator's), operation streams and clients")
	f.StringVar(&o.out, "out", "", "directory for report.txt, report.json and report.png")
	f.StringVar(&o.jsonPath, "json", "", "also write the report as JSON to this file")
	f.BoolVar(&o.predict, "predict", true, "compute the simulator's prediction for the same map and workload")
	return cmd
}

func (o *benchOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	cluster, st, err := o.cluster(ctx)
	if err != nil {
		return err
	}
	if err := o.configure(st, cmd.Flags().Changed); err != nil {
		return err
	}
	if err := o.configureVia(); err != nil {
		return err
	}
	stopTwemproxy, err := o.startTwemproxy(ctx, st)
	if err != nil {
		return err
	}
	defer stopTwemproxy()
	o.cfg.Progress = report.ProgressBar(cmd.ErrOrStderr())
	o.cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	src := o.cfg.MapSource
	if src == nil {
		src = mapwatch.File(o.cfg.MapFile)
	}
	start, err := mapwatch.Open(ctx, src, nil)
	if err != nil {
		return err
	}
	r, err := driver.Run(ctx, o.cfg, cluster)
	if err != nil {
		return err
	}
	if st != nil {
		r.Config.Cluster = st.Cluster
	}
	if o.predict && st != nil {
		if err := o.addPrediction(r, st, start.Current().Map()); err != nil {
			cmd.PrintErrf("no prediction: %v\n", err)
		}
	}
	return o.write(cmd, r)
}

// cluster finds the cluster to drive: a standalone one through its control
// API, or only a map file.
func (o *benchOptions) cluster(ctx context.Context) (driver.Cluster, *control.Status, error) {
	if o.maps.set() && o.ref.runDir == "" && o.ref.name == "" && len(o.ref.files) == 0 {
		src, err := o.maps.source(slog.New(slog.DiscardHandler))
		if err != nil {
			return nil, nil, err
		}
		o.cfg.MapSource = src
		if err := o.key.load(); err != nil {
			return nil, nil, err
		}
		o.key.apply(&o.cfg.Client.Transport)
		// The cluster's nodes and shims are elsewhere (other pods): their
		// replies come to this host's address, not to loopback.
		o.cfg.Client.Transport.Addr = "0.0.0.0:0"
		if o.listen != "" {
			o.cfg.Client.Transport.Addr = o.listen
		}
		return mapOnly{}, nil, nil
	}
	runDir, err := o.ref.resolveRunDir(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := o.key.loadForRunDir(runDir); err != nil {
		return nil, nil, err
	}
	o.key.apply(&o.cfg.Client.Transport)
	if o.listen != "" {
		o.cfg.Client.Transport.Addr = o.listen
	}
	c := control.Dial(runDir)
	st, err := c.Status(ctx)
	if err != nil {
		return nil, nil, err
	}
	o.cfg.MapFile = st.MapFile
	// The cluster's processes take bundles: its clients send them too, as
	// its gateway does.
	o.cfg.Client.Transport.Bundle = st.Bundles
	return standaloneCluster{c: c, twemproxy: o.twemproxyServers}, &st, nil
}

// configure turns the flags into the driver's configuration; changed
// tells whether a flag was given.
func (o *benchOptions) configure(st *control.Status, changed func(flag string) bool) error {
	for _, m := range o.modes {
		o.cfg.Modes = append(o.cfg.Modes, driver.Mode(strings.TrimSpace(m)))
	}
	if o.cfg.Skew == 0 {
		o.cfg.Uniform = true
	}
	f, err := o.failure(st, changed)
	if err != nil {
		return err
	}
	o.cfg.Failure = f
	return o.shift()
}

// shift checks --shift-at against --duration and --modes and sets the
// driver's ShiftAt.
func (o *benchOptions) shift() error {
	window := o.cfg.WithDefaults()
	switch {
	case o.shiftAt < 0:
		return fmt.Errorf("cannot shift the hot set: --shift-at %v is negative", o.shiftAt)
	case o.shiftAt == 0:
		return nil
	case o.shiftAt >= window.Duration:
		return fmt.Errorf("cannot shift the hot set at %v: --shift-at must be less than --duration (%v), the measured window", o.shiftAt, window.Duration)
	case !slices.Contains(window.Modes, driver.DistCache):
		return fmt.Errorf("cannot shift the hot set: --shift-at shifts it in the distcache mode's window, and --modes %s does not run it", strings.Join(o.modes, ","))
	}
	o.cfg.ShiftAt = o.shiftAt
	return nil
}

// failure turns --fail-node, --fail-mode, --slow-delay and --down-for into
// the failure to inject (nil without --fail-node); changed tells whether a
// flag was given.
func (o *benchOptions) failure(st *control.Status, changed func(flag string) bool) (*driver.Failure, error) {
	mode, err := driver.ParseFailureMode(strings.TrimSpace(o.failMode))
	if err != nil {
		return nil, fmt.Errorf("cannot parse --fail-mode: %w", err)
	}
	switch {
	case o.failNode == "" && (changed("fail-mode") || changed("slow-delay")):
		return nil, errors.New("--fail-mode and --slow-delay need --fail-node")
	case changed("slow-delay") && mode != driver.FailSlow:
		return nil, fmt.Errorf("--slow-delay is the delay of --fail-mode slow, not of %s", mode)
	case mode == driver.FailSlow && o.slowDelay <= 0:
		return nil, fmt.Errorf("--slow-delay %v must be positive", o.slowDelay)
	case o.failNode == "":
		return nil, nil
	}
	name, at, ok := strings.Cut(o.failNode, "@")
	d, err := time.ParseDuration(at)
	if !ok || name == "" || err != nil || d < 0 {
		return nil, fmt.Errorf("cannot parse --fail-node %q: want NAME@T, e.g. demo-spine-1@8s", o.failNode)
	}
	if st != nil && !hasNode(st, name) {
		return nil, fmt.Errorf("cannot fail %s: no cache node of that name in cluster %s", name, st.Cluster)
	}
	f := &driver.Failure{Member: name, Mode: mode, At: d, DownFor: o.downFor}
	if mode == driver.FailSlow {
		f.Delay = o.slowDelay
	}
	return f, nil
}

func hasNode(st *control.Status, name string) bool {
	for _, p := range st.Processes {
		if p.Kind == "node" && p.Name == name {
			return true
		}
	}
	return false
}

// addPrediction evaluates the simulator on the cluster's map (as published
// when the run started) and the run's workload, and records its normalized
// throughput next to each mode's measurement.
func (o *benchOptions) addPrediction(r *driver.Report, st *control.Status, m *partmap.Map) error {
	if o.cfg.HotRacks > 0 {
		return errors.New("the simulator draws the hot set from every rack, not from the first --hot-racks")
	}
	if len(st.Layers) != 2 || st.Layers[0].BoundToRacks || !st.Layers[1].BoundToRacks {
		return errors.New("the simulator models a spine layer above a leaf layer bound to the racks")
	}
	if st.Layers[0].Entries != st.Layers[1].Entries {
		return errors.New("the simulator needs the same cache capacity (entries) in both layers")
	}
	perRack := len(m.Storage.Racks[0].Shards)
	if st.ShardRate > 0 && st.NodeRate != st.ShardRate*float64(perRack) {
		return fmt.Errorf("the simulator gives a cache node a rack's capacity (%d × a shard's), not %v", perRack, st.NodeRate)
	}
	cfg := sim.Quick(sim.Default())
	cfg.Spines, cfg.Racks, cfg.ServersPerRack = st.Layers[0].Nodes, len(m.Storage.Racks), perRack
	cfg.CachePerNode = st.Layers[0].Entries
	cfg.Keys, cfg.Skew, cfg.WriteRatio = r.Config.Keys, r.Config.Skew, r.Config.WriteRatio
	cfg.Map, cfg.Seed = m, r.Config.Seed
	// A cluster whose control loop decides copies by cost and benefit
	// runs the simulator's adaptive strategy, with the same decision code.
	distcache := sim.DistCache
	if st.AdaptiveCopies {
		distcache = sim.Adaptive
	}
	results, err := sim.Evaluate(cfg, []sim.Strategy{sim.NoCache, distcache})
	if err != nil {
		return err
	}
	byMode := map[driver.Mode]float64{}
	for _, res := range results {
		switch res.Strategy {
		case sim.NoCache:
			byMode[driver.NoCache] = res.Throughput
		case distcache:
			byMode[driver.DistCache] = res.Throughput
		}
	}
	for i := range r.Modes {
		if v, ok := byMode[r.Modes[i].Mode]; ok {
			r.Modes[i].Predicted = &v
		}
	}
	return nil
}

// write prints the report and writes the requested files.
func (o *benchOptions) write(cmd *cobra.Command, r *driver.Report) error {
	if err := report.WriteText(cmd.OutOrStdout(), r); err != nil {
		return err
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return fmt.Errorf("cannot create %s: %w", o.out, err)
		}
		txt, err := os.Create(filepath.Join(o.out, "report.txt"))
		if err != nil {
			return fmt.Errorf("cannot write the report: %w", err)
		}
		defer txt.Close()
		if err := report.WriteText(txt, r); err != nil {
			return err
		}
		if err := report.WriteJSON(filepath.Join(o.out, "report.json"), r); err != nil {
			return err
		}
		png := filepath.Join(o.out, "report.png")
		if err := report.WritePNG(png, r); err != nil {
			return err
		}
		cmd.Printf("\nreport: %s, report.json, report.png\n", filepath.Join(o.out, "report.txt"))
	}
	if o.jsonPath != "" {
		return report.WriteJSON(o.jsonPath, r)
	}
	return nil
}

// standaloneCluster is a standalone cluster seen through its control API.
type standaloneCluster struct {
	c         *control.Client
	twemproxy []string // mode twemproxy's Redis servers, when not the cluster's
}

func (s standaloneCluster) Work(ctx context.Context) ([]driver.Work, error) {
	ps, err := s.c.Work(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]driver.Work, 0, len(ps))
	for _, p := range ps {
		name := p.Name
		if p.Kind == "shim" {
			name = p.Shard
		}
		out = append(out, driver.Work{Name: name, Node: p.Kind == "node", Layer: p.Layer, Units: p.WorkUnits,
			Capacity: p.Capacity, Coherence: p.Coherence})
	}
	return out, nil
}

func (s standaloneCluster) Kill(ctx context.Context, member string) error {
	return s.c.Kill(ctx, member)
}
func (s standaloneCluster) Restart(ctx context.Context, member string) error {
	return s.c.Restart(ctx, member)
}
func (s standaloneCluster) Pause(ctx context.Context, member string) error {
	return s.c.Pause(ctx, member)
}
func (s standaloneCluster) Resume(ctx context.Context, member string) error {
	return s.c.Resume(ctx, member)
}
func (s standaloneCluster) Slow(ctx context.Context, member string, delay time.Duration) error {
	return s.c.Slow(ctx, member, delay)
}
func (s standaloneCluster) Unslow(ctx context.Context, member string) error {
	return s.c.Unslow(ctx, member)
}

// mapOnly is a cluster known only by its map file: no loads, no failures.
type mapOnly struct{}

// errNeedsStandalone is wrapped by every failure of a mapOnly cluster.
var errNeedsStandalone = errors.New("--fail-node needs a standalone cluster (found by --run-dir, --cluster or -f), not --map")

func (mapOnly) Work(context.Context) ([]driver.Work, error) { return nil, nil }
func (mapOnly) Kill(_ context.Context, member string) error {
	return fmt.Errorf("cannot kill %s: %w", member, errNeedsStandalone)
}
func (mapOnly) Restart(_ context.Context, member string) error {
	return fmt.Errorf("cannot restart %s: %w", member, errNeedsStandalone)
}
func (mapOnly) Pause(_ context.Context, member string) error {
	return fmt.Errorf("cannot pause %s: %w", member, errNeedsStandalone)
}
func (mapOnly) Resume(_ context.Context, member string) error {
	return fmt.Errorf("cannot resume %s: %w", member, errNeedsStandalone)
}
func (mapOnly) Slow(_ context.Context, member string, _ time.Duration) error {
	return fmt.Errorf("cannot slow %s: %w", member, errNeedsStandalone)
}
func (mapOnly) Unslow(_ context.Context, member string) error {
	return fmt.Errorf("cannot unslow %s: %w", member, errNeedsStandalone)
}
