package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/standalone"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/cpuquota"
	"github.com/distcache/distcache/standalone/plan"
)

// upOptions are the flags of `distcache up`.
type upOptions struct {
	ref           clusterRef
	foreground    bool
	shardCapacity float64
	nodeCapacity  float64
	serverCPU     float64
	logLevel      string
	redisServer   string
	prometheus    string
	gateway       bool
	startTimeout  time.Duration
	probeInterval time.Duration
	mapPoll       time.Duration
	bundle        bool
	directReads   bool
	directWrites  bool
	copies        bool
	copiesShard   float64
	copiesNode    float64
	// gatewayUsersDir, gatewayTLSCert and gatewayTLSKey are the gateway's
	// --users-dir, --tls-cert and --tls-key (plan.Options).
	gatewayUsersDir, gatewayTLSCert, gatewayTLSKey string
	// redisAuthDir and redisTLSDir hold the keys of the Secrets of
	// storage.auth and storage.tls, a file each.
	redisAuthDir, redisTLSDir string
	// switchPipelineDir holds the keys of the ConfigMap or Secret of the
	// SwitchFabrics' pipelineSource, a file each.
	switchPipelineDir string
	// memberDomains are the --member-domain flags: NAME=ZONE/HOST.
	memberDomains []string
}

func newUpCommand() *cobra.Command {
	o := &upOptions{}
	cmd := &cobra.Command{
		Use:   "up -f cluster.yaml",
		Short: "Run a CacheCluster as local processes (standalone mode)",
		Long: `up reads a CacheCluster (and the CacheLayers it refers to) from the -f
files, defaults and validates them exactly as the Kubernetes API server would,
and runs the cluster on this host: a redis-server and a storage shim per
storage shard and a cache node per layer member, on loopback ports, with their
logs and the partition map in the run directory. A control loop, a supervised
process of its own like the others, health-checks the cache nodes, remaps a
failed one and restores it when it is back, with the spec's failover settings.
A Redis-compatible gateway (distcache gateway) serves the cluster to Redis
clients on a loopback port that up prints; --gateway=false leaves it out.
--gateway-users-dir makes it require AUTH with the users of a directory (a
file per user, holding its password), --gateway-tls-cert and
--gateway-tls-key serve it over TLS: standalone mode's
spec.gateway.usersSecretName and tlsSecretName, which it refuses.
--redis-auth-dir and --redis-tls-dir hold the keys of the Secrets of
spec.storage.auth and storage.tls, a file per key; --switch-pipeline-dir
those of the ConfigMap or Secret of a SwitchFabric's spec.pipelineSource
(the compiled program pushed to the switches: docs/switches.md).

up returns once every process is ready and leaves the cluster running in the
background; see it with 'distcache status', stop it with 'distcache down'.
With --foreground it runs in the foreground until interrupted.

Every process's /metrics address is listed in the run directory's
prometheus-targets.json, for a Prometheus' file_sd_configs; --prometheus
runs one as a process of the cluster, scraping every process each second,
and prints its address.

--shard-capacity emulates slower servers, as the DistCache paper's testbed
does (§6.1): each storage shim serves at most that many work units per second
and each cache node the aggregate of one rack (shards per rack × it), so that
one machine can show the load balancing of many servers.

--server-cpu gives the servers real, equal CPU instead: each storage server
(its redis-server and shim together) and each cache node runs in a cgroup of
its own limited to that many CPUs (cgroup v1 cpu.cfs_quota_us or v2 cpu.max,
as a pod's CPU limit; it needs root or a delegated cgroup), and the Go ones
run with GOMAXPROCS of the limit rounded up. 'distcache status --json' shows
each process's cgroup. make bench-real-cpu compares DistCache with twemproxy
this way (docs/benchmarks.md).`,
		Example: `  distcache up -f hack/demo/cluster.yaml
  distcache up -f hack/demo/cluster.yaml --prometheus
  distcache up -f hack/demo/cluster.yaml --gateway-users-dir users/ --gateway-tls-cert tls.crt --gateway-tls-key tls.key
  distcache up -f cluster.yaml -f layers.yaml --shard-capacity 300 --run-dir out/run
  distcache up -f hack/gatewaybench/cluster.yaml --server-cpu 0.05   # as root`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.ref.addFlags(cmd, "CacheCluster and CacheLayer YAML files (repeatable)")
	f := cmd.Flags()
	f.BoolVar(&o.foreground, "foreground", false, "run in the foreground until interrupted instead of in the background")
	f.StringArrayVar(&o.memberDomains, "member-domain", nil,
		"NAME=ZONE/HOST (or NAME=HOST): the failure domains of cache member NAME, as Kubernetes nodes and zones are for pods; a key's candidates are placed on distinct hosts and zones where they allow it (repeatable)")
	f.Float64Var(&o.shardCapacity, "shard-capacity", 0, "emulated capacity of each storage shard in work units per second (0: not emulated)")
	f.Float64Var(&o.nodeCapacity, "node-capacity", 0, "emulated capacity of each cache node (default: shards per rack × --shard-capacity)")
	f.Float64Var(&o.serverCPU, "server-cpu", 0, "CPU limit in CPUs of each storage server (redis-server and shim together) and each cache node, a cgroup each (0: none)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level of the cluster's processes")
	f.StringVar(&o.redisServer, "redis-server", "redis-server", "the redis-server program")
	f.StringVar(&o.prometheus, "prometheus", "",
		"also run a Prometheus that scrapes every process each second (the prometheus program; --prometheus alone: prometheus on PATH, Debian's package prometheus)")
	f.Lookup("prometheus").NoOptDefVal = "prometheus"
	f.BoolVar(&o.gateway, "gateway", true, "also run the Redis-compatible gateway (distcache gateway), for redis-cli and other Redis clients")
	f.StringVar(&o.gatewayUsersDir, "gateway-users-dir", "",
		"directory with a file per user, named as the user and holding its password: the gateway requires AUTH (its --users-dir; read at every AUTH, so a changed password applies without a restart)")
	f.StringVar(&o.gatewayTLSCert, "gateway-tls-cert", "", "PEM certificate: the gateway serves Redis clients over TLS (with --gateway-tls-key; re-read when it changes)")
	f.StringVar(&o.gatewayTLSKey, "gateway-tls-key", "", "PEM private key of --gateway-tls-cert")
	f.StringVar(&o.redisAuthDir, "redis-auth-dir", "",
		"directory with the keys of spec.storage.auth's Secret, a file each (password, previous): the redis-servers require the password and the shims log in with it; a changed file applies without a restart")
	f.StringVar(&o.redisTLSDir, "redis-tls-dir", "",
		"directory with the keys of spec.storage.tls's Secrets, a file each (tls.crt, tls.key, ca.crt): the redis-servers serve TLS only and the shims verify them; a changed certificate applies without a restart")
	f.StringVar(&o.switchPipelineDir, "switch-pipeline-dir", "",
		"directory with the keys of the ConfigMap or Secret of the SwitchFabrics' spec.pipelineSource, a file each (p4info.txt, device_config.bin): the compiled program the fabric controller checks and pushes to the switches")
	f.DurationVar(&o.startTimeout, "start-timeout", standalone.DefaultStartTimeout, "how long every process may take to become ready")
	f.DurationVar(&o.probeInterval, "probe-interval", 50*time.Millisecond,
		"health-check period of the control loop (/healthz and a data-plane PING); a cache node is fenced in the probe that finds it not ready, well before spec.failover.gracePeriod fails it (a refused connection makes it not ready at once, an unanswered /healthz after four periods, unanswered PINGs after four when the node's /healthz reports spare capacity and after ten when it is busy)")
	f.DurationVar(&o.mapPoll, "map-poll", 100*time.Millisecond,
		"how often processes check the map file for a new version, besides reading it when inotify says it changed (the switches' controllers at least every quarter of spec.coherence.servingLease: they renew the switches' leases by reading it)")
	f.BoolVar(&o.bundle, "bundle", false,
		"the data-plane processes send the messages that leave together for one peer in one bundle datagram instead of a datagram each (spec.dataPlane.bundles; their --bundle)")
	f.BoolVar(&o.directReads, "direct-reads", false,
		"clients and the gateway read the keys no cache holds from the shards' redis-servers themselves instead of through the nodes and shims (spec.dataPlane.directReads); not with --shard-capacity, which the shims count")
	f.BoolVar(&o.directWrites, "direct-writes", false,
		"with --direct-reads, clients and the gateway also send plain SETs and INCRs of the keys no cache may hold to the shards' redis-servers themselves (spec.dataPlane.directWrites)")
	f.BoolVar(&o.copies, "adaptive-copies", false,
		"the control loop decides every hot key's copies by cost and benefit from the nodes' and shims' reports (none for a write-hot key, more than one per layer for one hotter than half a node) and publishes them with the map (turns spec.hotKeys.replication on; the spec's settings apply)")
	f.Float64Var(&o.copiesShard, "copies-shard-capacity", 0,
		"requests per second a storage shard serves, as --adaptive-copies assumes (spec.hotKeys.replication.storageCapacity; default: the spec's, else --shard-capacity, else 20000)")
	f.Float64Var(&o.copiesNode, "copies-node-capacity", 0,
		"requests per second a cache node serves, as --adaptive-copies assumes (spec.hotKeys.replication.nodeCapacity; default: the spec's, else the nodes' emulated capacity, else 200000)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *upOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	_, topo, err := o.ref.loadCluster(ctx)
	if err != nil {
		return err
	}
	// What the plan refuses is refused here, before the cluster starts in
	// the background: the gateway's files must exist and be readable.
	domains, err := parseMemberDomains(o.memberDomains)
	if err != nil {
		return err
	}
	gw := plan.Options{NoGateway: !o.gateway, GatewayUsersDir: o.gatewayUsersDir, GatewayTLSCert: o.gatewayTLSCert, GatewayTLSKey: o.gatewayTLSKey, Domains: domains,
		RedisAuthDir: o.redisAuthDir, RedisTLSDir: o.redisTLSDir, SwitchPipelineDir: o.switchPipelineDir}
	if err := plan.Check(topo, &gw); err != nil {
		return err
	}
	if err := o.checkServerCPU(); err != nil {
		return err
	}
	o.gatewayUsersDir, o.gatewayTLSCert, o.gatewayTLSKey = gw.GatewayUsersDir, gw.GatewayTLSCert, gw.GatewayTLSKey // absolute
	o.redisAuthDir, o.redisTLSDir, o.switchPipelineDir = gw.RedisAuthDir, gw.RedisTLSDir, gw.SwitchPipelineDir
	if o.ref.runDir == "" {
		o.ref.runDir = filepath.Join(defaultStateRoot(), topo.Name)
	}
	runDir, err := filepath.Abs(o.ref.runDir)
	if err != nil {
		return fmt.Errorf("cannot use run directory %s: %w", o.ref.runDir, err)
	}
	if st, err := control.Dial(runDir).Status(ctx); err == nil {
		return fmt.Errorf("cannot start %s: cluster %s is already running in %s (pid %d); stop it with 'distcache down --run-dir %s'",
			topo.Name, st.Cluster, runDir, st.PID, runDir)
	}
	if o.foreground {
		return o.runForeground(cmd, topo, runDir)
	}
	return o.runBackground(cmd, topo, runDir)
}

// runForeground runs the cluster in this process until SIGINT or SIGTERM.
func (o *upOptions) runForeground(cmd *cobra.Command, topo *layout.Cluster, runDir string) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("cannot parse --log-level %q: %w", o.logLevel, err)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: lvl}))
	log.Info("starting cluster", "cluster", topo.Name, "run_dir", runDir, "gateway", o.gateway, "bundle", o.bundle, "adaptive_copies", o.copies,
		"shard_capacity", o.shardCapacity, "node_capacity", o.nodeCapacity, "server_cpu", o.serverCPU, "map_poll", o.mapPoll)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the distcache executable: %w", err)
	}
	redisPath, err := exec.LookPath(o.redisServer)
	if err != nil && len(topo.Spec.Storage.External) == 0 {
		return fmt.Errorf("cannot find %s (install the Debian package redis-server, or run `make demo`, which does): %w", o.redisServer, err)
	}
	var prometheusPath string
	if o.prometheus != "" {
		if prometheusPath, err = exec.LookPath(o.prometheus); err != nil {
			return fmt.Errorf("cannot find %s (install the Debian package prometheus): %w", o.prometheus, err)
		}
	}
	domains, err := parseMemberDomains(o.memberDomains)
	if err != nil {
		return err
	}
	dataPlaneSpec(&topo.Spec, o.bundle, o.directReads, o.directWrites)
	if err := o.copiesSpec(&topo.Spec); err != nil {
		return err
	}
	p, err := plan.New(topo, plan.Options{
		RunDir: runDir, Binary: self, RedisServer: redisPath, Prometheus: prometheusPath, NoGateway: !o.gateway,
		GatewayUsersDir: o.gatewayUsersDir, GatewayTLSCert: o.gatewayTLSCert, GatewayTLSKey: o.gatewayTLSKey,
		RedisAuthDir: o.redisAuthDir, RedisTLSDir: o.redisTLSDir, SwitchPipelineDir: o.switchPipelineDir,
		ShardRate: o.shardCapacity, NodeRate: o.nodeCapacity, MapPoll: o.mapPoll, LogLevel: o.logLevel,
		GOMAXPROCS: inheritedMaxProcs(), ServerCPU: o.serverCPU, Domains: domains,
	})
	if err != nil {
		return err
	}
	if p.GOMAXPROCS > 0 {
		log.Info("the shims, cache nodes and control loop share the host's CPUs: each runs with GOMAXPROCS "+
			"(set GOMAXPROCS to choose it)", "gomaxprocs", p.GOMAXPROCS, "cpus", runtime.NumCPU())
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.probeInterval <= 0 {
		return fmt.Errorf("cannot use --probe-interval %v: it must be positive", o.probeInterval)
	}
	policy := layout.FailoverPolicy(&topo.Spec, layout.LocalMapDeliveryLag)
	policy.FenceAfter = fenceAfter
	return standalone.Run(ctx, standalone.Config{
		Plan: p, RunDir: runDir, Policy: policy,
		ProbeInterval: o.probeInterval, StartTimeout: o.startTimeout, Logger: log,
		Ready: func() {
			cmd.Printf("cluster %s ready: %d processes, run directory %s\n", topo.Name, len(p.Processes), runDir)
		},
	})
}

// inheritedMaxProcs is plan.Options.GOMAXPROCS: -1 (the processes inherit
// it) when GOMAXPROCS is set in the environment, else 0 (the plan chooses).
func inheritedMaxProcs() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return -1
	}
	return 0
}

// copiesSpec applies --adaptive-copies and the capacities it assumes to
// spec: it turns spec.hotKeys.replication on, as a CacheCluster that sets
// it does on Kubernetes, and sets the capacities given.
func (o *upOptions) copiesSpec(spec *v1alpha1.CacheClusterSpec) error {
	if !o.copies {
		return nil
	}
	if o.copiesShard < 0 || o.copiesNode < 0 {
		return fmt.Errorf("cannot use --copies-shard-capacity %v or --copies-node-capacity %v: capacities are positive", o.copiesShard, o.copiesNode)
	}
	var r v1alpha1.HotKeyReplicationSpec
	if spec.HotKeys.Replication != nil {
		r = *spec.HotKeys.Replication
	}
	r.Enabled = true
	if o.copiesShard > 0 {
		r.StorageCapacity = int64(o.copiesShard)
	}
	if o.copiesNode > 0 {
		r.NodeCapacity = int64(o.copiesNode)
	}
	spec.HotKeys.Replication = &r
	return nil
}

// dataPlaneSpec applies --bundle, --direct-reads and --direct-writes to
// spec: each turns its field of spec.dataPlane on (bundles give every
// cache node, shim and gateway --bundle, layout.DataPlaneArgs, as on
// Kubernetes; direct reads put the shards' Redis addresses in the map,
// direct writes mark those shards written directly).
func dataPlaneSpec(spec *v1alpha1.CacheClusterSpec, bundle, directReads, directWrites bool) {
	if !bundle && !directReads && !directWrites {
		return
	}
	var dp v1alpha1.DataPlaneSpec
	if spec.DataPlane != nil {
		dp = *spec.DataPlane
	}
	dp.Bundles = dp.Bundles || bundle
	dp.DirectReads = dp.DirectReads || directReads
	dp.DirectWrites = dp.DirectWrites || directWrites
	spec.DataPlane = &dp
}

// runBackground starts `distcache up --foreground` in a session of its own,
// logging to the run directory, and waits until the cluster is ready.
func (o *upOptions) runBackground(cmd *cobra.Command, topo *layout.Cluster, runDir string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the distcache executable: %w", err)
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("cannot create run directory: %w", err)
	}
	logPath := filepath.Join(runDir, "distcache.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cannot create %s: %w", logPath, err)
	}
	defer logf.Close()
	args, err := daemonArgs(cmd, runDir, o.ref.files)
	if err != nil {
		return err
	}
	// The cluster outlives this command: its context must not end it.
	daemon := exec.CommandContext(context.WithoutCancel(cmd.Context()), self, args...)
	daemon.Stdout, daemon.Stderr = logf, logf
	daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := daemon.Start(); err != nil {
		return fmt.Errorf("cannot start the cluster: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	cmd.Printf("starting cluster %s (pid %d), logs in %s\n", topo.Name, daemon.Process.Pid, logPath)
	st, err := waitStarted(cmd.Context(), runDir, exited, o.startTimeout+10*time.Second)
	if err != nil {
		return fmt.Errorf("%w; the end of its log %s:\n%s", err, logPath, tail(logPath, 4096))
	}
	printSummary(cmd.OutOrStdout(), st)
	cmd.Printf("\nstatus: distcache status --run-dir %s\nstop:   distcache down --run-dir %s\n", runDir, runDir)
	if st.TargetsFile != "" {
		cmd.Printf("scrape: %s (Prometheus file_sd_configs: every process's /metrics, the supervisor's at %s)\n", st.TargetsFile, st.MetricsAddr)
	}
	for _, p := range st.Processes {
		if p.Kind == string(plan.Prometheus) {
			cmd.Printf("prometheus: http://%s (scraping every process each second)\n", p.Addr)
		}
	}
	if line := gatewayLine(st); line != "" {
		cmd.Println(line)
	}
	return nil
}

// daemonArgs is the command line of the background `distcache up
// --foreground` that runBackground starts: every flag the user set, as
// set (a flag left out here would silently not apply to the cluster), the
// resolved run directory, and the cluster files as absolute paths.
func daemonArgs(cmd *cobra.Command, runDir string, files []string) ([]string, error) {
	args := []string{"up", "--foreground", "--run-dir", runDir}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "foreground", "run-dir", "filename":
		case "member-domain": // repeatable: one flag a value
			for _, v := range f.Value.(pflag.SliceValue).GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
		default:
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, fmt.Errorf("cannot use %s: %w", f, err)
		}
		args = append(args, "-f", abs)
	}
	return args, nil
}

// waitStarted polls the control API until the cluster has started, the
// daemon exits, or timeout passes.
func waitStarted(ctx context.Context, runDir string, exited <-chan error, timeout time.Duration) (control.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := control.Dial(runDir)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if st, err := c.Status(ctx); err == nil && st.Phase != control.Starting {
			return st, nil
		}
		select {
		case err := <-exited:
			return control.Status{}, fmt.Errorf("cannot start the cluster: it exited: %w", err)
		case <-ctx.Done():
			return control.Status{}, errors.New("cannot start the cluster: not ready in time")
		case <-t.C:
		}
	}
}

// tail returns the last n bytes of the file at path.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// fenceAfter is how long a cache node must have been not Ready before
// standalone mode's control loop fences it (failover.Policy.FenceAfter):
// less than any probe takes, so the step that finds it not Ready fences
// it. Waiting longer would only delay the writes of its keys: a refused
// check is certain (nothing listens on the node's port), an unanswered one
// makes the node not Ready only after the probers' patience, and a fenced
// node that is Ready again is Active at once (its keys never moved).
const fenceAfter = time.Nanosecond

// checkServerCPU refuses a --server-cpu the host cannot give before the
// cluster starts in the background.
func (o *upOptions) checkServerCPU() error {
	if o.serverCPU == 0 {
		return nil
	}
	if err := cpuquota.CheckLimit(o.serverCPU); err != nil {
		return fmt.Errorf("cannot use --server-cpu: %w", err)
	}
	if _, err := cpuquota.Detect(); err != nil {
		return fmt.Errorf("cannot use --server-cpu: %w", err)
	}
	return nil
}

// parseMemberDomains parses --member-domain values, NAME=ZONE/HOST or
// NAME=HOST.
func parseMemberDomains(values []string) (map[string]plan.Domain, error) {
	if len(values) == 0 {
		return nil, nil
	}
	out := make(map[string]plan.Domain, len(values))
	for _, v := range values {
		name, domain, ok := strings.Cut(v, "=")
		if !ok || name == "" || domain == "" {
			return nil, fmt.Errorf("cannot parse --member-domain %q: want NAME=ZONE/HOST or NAME=HOST", v)
		}
		var d plan.Domain
		if zone, host, hasZone := strings.Cut(domain, "/"); hasZone {
			d = plan.Domain{Zone: zone, Host: host}
		} else {
			d.Host = domain
		}
		if d.Host == "" {
			return nil, fmt.Errorf("cannot parse --member-domain %q: the host is empty", v)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("cannot parse --member-domain %q: member %s given twice", v, name)
		}
		out[name] = d
	}
	return out, nil
}
