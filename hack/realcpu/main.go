// Command realcpu measures DistCache against twemproxy on real, equal CPU
// (make bench-real-cpu, docs/benchmarks.md): no emulated capacity, every
// server under the same CPU limit.
//
// It starts the standalone cluster of -f with `distcache up --server-cpu`
// (each storage server — a redis-server and its shim — and each cache node
// in a cgroup of its own), and as many plain redis-servers as the cluster
// has servers, each in a cgroup with the same limit. Then, per Zipf skew,
// `distcache bench --via gateway --modes twemproxy,distcache` drives
// twemproxy in front of those redis-servers and DistCache behind its
// gateway with the same closed loop: -concurrency operations outstanding,
// offered faster than either can serve, so each runs at what its servers'
// CPU allows. The proxies, the gateways and the clients run outside the
// limits, on the rest of the machine; the report gives the host's idle CPU
// over each window to show they did not run out.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/hack/internal/localcluster"
	"github.com/distcache/distcache/internal/freeport"
	"github.com/distcache/distcache/standalone/cpuquota"
	"github.com/distcache/distcache/workload/driver"
)

type options struct {
	distcache, clusterFile, runDir, out string
	headlineFile                        string
	cpu                                 float64
	skews                               string
	keys                                uint64
	writeRatio                          float64
	duration, warmup                    time.Duration
	concurrency, preload, valueSize     int
	clients                             int
	modes                               string
	fill                                bool
}

func main() {
	var o options
	flag.StringVar(&o.distcache, "distcache", "bin/distcache", "the distcache binary")
	flag.StringVar(&o.clusterFile, "f", "hack/gatewaybench/cluster.yaml", "the cluster's YAML")
	flag.StringVar(&o.runDir, "run-dir", "out/realcpu/run", "the cluster's run directory")
	flag.StringVar(&o.out, "out", "out/realcpu", "directory for report.md and each skew's bench report")
	flag.Float64Var(&o.cpu, "cpu", 0.025, "CPU limit of every server, in CPUs")
	flag.StringVar(&o.skews, "skews", "0.9,0.99,1.2", "Zipf exponents, comma-separated")
	flag.Uint64Var(&o.keys, "keys", 1_000_000, "key space")
	flag.Float64Var(&o.writeRatio, "write-ratio", 0.05, "share of writes")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "measured window per mode and skew")
	flag.DurationVar(&o.warmup, "warmup", 20*time.Second, "DistCache's warm-up before each window")
	flag.IntVar(&o.concurrency, "concurrency", 64, "operations outstanding (closed loop)")
	flag.IntVar(&o.clients, "clients", 1, "DistCache's gateways in the benchmark's process, each with a client of its own (one: as twemproxy is one proxy)")
	flag.StringVar(&o.modes, "modes", "twemproxy,distcache", "the sides to run, comma-separated")
	flag.BoolVar(&o.fill, "fill", true, "write every key once before the runs, on both sides, straight into Redis")
	flag.IntVar(&o.preload, "preload", 0, "hottest keys written through each side before each run (0: none with -fill, else the bench's default)")
	flag.IntVar(&o.valueSize, "value-size", 128, "value size in bytes")
	flag.StringVar(&o.headlineFile, "headline", "", "also write each skew's result as one sentence to this file (make demo's headline)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.run(ctx); err != nil {
		log.Fatal(err)
	}
}

func (o options) run(ctx context.Context) error {
	// Absolute: redis-server changes into its --dir before it opens its
	// --logfile, so a relative path would name a file under that dir.
	out, err := filepath.Abs(o.out)
	if err != nil {
		return fmt.Errorf("cannot use %s: %w", o.out, err)
	}
	o.out = out
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", o.out, err)
	}
	sd, cleanup, err := o.start(ctx)
	defer cleanup()
	if err != nil {
		return err
	}
	var rows []row
	for _, s := range strings.Split(o.skews, ",") {
		skew, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return fmt.Errorf("cannot parse skew %q: %w", s, err)
		}
		r, err := o.bench(ctx, skew, sd)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		fmt.Fprintln(os.Stderr, r.line())
	}
	md := o.render(rows)
	fmt.Print(md)
	if o.headlineFile != "" {
		var lines strings.Builder
		for _, r := range rows {
			lines.WriteString(o.headline(r, len(sd.twemproxy)) + "\n")
		}
		if err := os.WriteFile(o.headlineFile, []byte(lines.String()), 0o644); err != nil {
			return fmt.Errorf("cannot write the headline: %w", err)
		}
	}
	return os.WriteFile(filepath.Join(o.out, "report.md"), []byte(md), 0o644)
}

// start brings up the cluster under limits and the plain redis-servers
// twemproxy fronts, each limited alike; it returns their addresses.
func (o options) start(ctx context.Context) (*sides, func(), error) {
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	st, down, err := localcluster.Up(ctx, o.distcache, o.clusterFile, o.runDir,
		"--server-cpu", strconv.FormatFloat(o.cpu, 'g', -1, 64))
	undo = append(undo, down)
	if err != nil {
		return nil, cleanup, err
	}
	sd := &sides{}
	seen := map[string]bool{} // a storage server's Redis and shim share a group
	for _, p := range st.Processes {
		if p.CPUGroup != "" && !seen[p.CPUGroup] {
			seen[p.CPUGroup] = true
			sd.distcache = append(sd.distcache, &cpuquota.Group{Name: p.Name, Dir: p.CPUGroup})
		}
	}
	if len(sd.distcache) == 0 {
		return nil, cleanup, errors.New("cannot find the cluster's CPU groups in its status")
	}
	h, err := cpuquota.Detect()
	if err != nil {
		return nil, cleanup, err
	}
	ports, _, err := freeport.Ports("127.0.0.1", len(sd.distcache), 0)
	if err != nil {
		return nil, cleanup, err
	}
	addrs := make([]string, len(sd.distcache))
	for i, port := range ports {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(port)
		g, stopRedis, err := o.startRedis(ctx, h, i, addrs[i])
		undo = append(undo, stopRedis)
		if err != nil {
			return nil, cleanup, err
		}
		sd.twemproxy = append(sd.twemproxy, g)
	}
	sd.addrs = addrs
	fmt.Fprintf(os.Stderr, "realcpu: %d servers each side, %g CPUs each; twemproxy's Redis servers at %s\n",
		len(sd.distcache), o.cpu, strings.Join(addrs, ","))
	if o.fill {
		if err := o.fillKeys(ctx, st, sd); err != nil {
			return nil, cleanup, err
		}
	}
	return sd, cleanup, nil
}

// sides are the two systems' servers: the cluster's CPU groups, and the
// plain redis-servers twemproxy fronts with theirs.
type sides struct {
	distcache, twemproxy []*cpuquota.Group
	addrs                []string // of the plain redis-servers
}

// startRedis runs redis-server i at addr in a cgroup of its own limited to
// o.cpu, without persistence (as the cluster's, appendOnly disabled), and
// waits until it answers.
func (o options) startRedis(ctx context.Context, h cpuquota.Hierarchy, i int, addr string) (*cpuquota.Group, func(), error) {
	host, port, _ := strings.Cut(addr, ":")
	g, err := h.Create(fmt.Sprintf("distcache/realcpu-%d/redis-%d", os.Getpid(), i), o.cpu)
	if err != nil {
		return nil, func() {}, err
	}
	dir := filepath.Join(o.out, "redis", strconv.Itoa(i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, func() {}, err
	}
	cmd := exec.CommandContext(context.WithoutCancel(ctx), "redis-server", "--bind", host, "--port", port,
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		return nil, func() { _ = g.Remove(h) }, fmt.Errorf("cannot start redis-server: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = g.Remove(h)
	}
	if err := g.Add(cmd.Process.Pid); err != nil {
		return nil, stop, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for start := time.Now(); ; {
		if err := rdb.Ping(ctx).Err(); err == nil {
			return g, stop, nil
		} else if time.Since(start) > 10*time.Second || ctx.Err() != nil {
			return nil, stop, fmt.Errorf("cannot reach redis-server at %s: %w", addr, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// bench runs each mode at skew on its own (so that its servers' throttling
// is its own) and reads their reports.
func (o options) bench(ctx context.Context, skew float64, sd *sides) (row, error) {
	r := row{skew: skew}
	for _, mode := range []driver.Mode{driver.Twemproxy, driver.DistCache} {
		if !strings.Contains(o.modes, string(mode)) {
			continue
		}
		groups := sd.distcache
		if mode == driver.Twemproxy {
			groups = sd.twemproxy
		}
		before, err := throttling(groups)
		if err != nil {
			return row{}, err
		}
		rep, err := o.benchMode(ctx, skew, mode, sd.addrs)
		if err != nil {
			return row{}, err
		}
		after, err := throttling(groups)
		if err != nil {
			return row{}, err
		}
		throttled := ratio(after.Throttled-before.Throttled, after.Periods-before.Periods)
		r.lost += rep.LostWrites
		r.checked += rep.CheckedKeys
		for _, m := range rep.Modes {
			if m.Mode != mode {
				continue
			}
			if mode == driver.Twemproxy {
				r.twemproxy, r.twemproxyThrottled = m, throttled
			} else {
				r.distcache, r.distcacheThrottled = m, throttled
			}
		}
	}
	return r, nil
}

// throttling sums the CFS accounting of groups.
func throttling(groups []*cpuquota.Group) (cpuquota.Stat, error) {
	var sum cpuquota.Stat
	for _, g := range groups {
		st, err := g.Stat()
		if err != nil {
			return sum, err
		}
		sum.Periods += st.Periods
		sum.Throttled += st.Throttled
		sum.ThrottledTime += st.ThrottledTime
	}
	return sum, nil
}

func ratio(n, d uint64) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// benchMode runs one mode at skew and reads its report.
func (o options) benchMode(ctx context.Context, skew float64, mode driver.Mode, servers []string) (*driver.Report, error) {
	jsonPath := filepath.Join(o.out, fmt.Sprintf("bench-%s-skew-%g.json", mode, skew))
	preload := o.preload
	if preload == 0 && o.fill {
		preload = -1 // every key exists: the bench writes none before the run
	}
	args := []string{"bench", "--run-dir", o.runDir, "--via", "gateway", "--modes", string(mode),
		"--twemproxy-servers", strings.Join(servers, ","),
		"--keys", strconv.FormatUint(o.keys, 10), "--skew", strconv.FormatFloat(skew, 'g', -1, 64),
		"--write-ratio", strconv.FormatFloat(o.writeRatio, 'g', -1, 64),
		// Offered far above what either side serves: the loop is closed by
		// the outstanding operations.
		"--rate", "1000000", "--concurrency", strconv.Itoa(o.concurrency), "--clients", strconv.Itoa(o.clients),
		"--preload", strconv.Itoa(preload), "--value-size", strconv.Itoa(o.valueSize), "--duration", o.duration.String(), "--warmup", o.warmup.String(),
		"--predict=false", "--json", jsonPath}
	fmt.Fprintf(os.Stderr, "realcpu: %s %s\n", o.distcache, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, o.distcache, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cannot run the benchmark of %s at skew %g: %w", mode, skew, err)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return nil, err
	}
	var rep driver.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", jsonPath, err)
	}
	return &rep, nil
}
