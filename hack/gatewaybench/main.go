// Command gatewaybench measures the Redis-compatible gateway side by side
// with twemproxy and with Redis itself, with redis-benchmark, on one
// machine: `make bench-gateway` runs it (docs/benchmarks.md).
//
// It starts the standalone cluster of cluster.yaml (no emulated capacity),
// twemproxy (nutcracker) in front of that cluster's four Redis servers, and
// runs redis-benchmark (50 connections, 128-byte values, keys drawn
// uniformly from -keys) for SET, GET and INCR, at -P 1 and -P 16, against one of
// the Redis servers directly, against twemproxy and against the gateway.
// For each run it reads the CPU time the serving processes used
// (/proc/PID/stat): the proxy alone (nutcracker, or the gateway) and every
// process a request passes (the proxy and the Redis servers; for the
// gateway also the cache nodes and the storage shims). It prints a
// Markdown table and writes it to -out.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/distcache/distcache/hack/internal/localcluster"
	"github.com/distcache/distcache/workload/twemproxy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gatewaybench:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	distcache, clusterFile, runDir, out string
	keys                                int
	requests                            map[string]int // per target
	pipelines                           []int
	// tests are redis-benchmark's tests (-t) each target runs.
	tests []string
	// floor adds the floor (floor_linux.go), a spike of the smallest
	// event-loop gateway, as a target of GETs.
	floor bool
	// hitKeys, when set, adds GET runs over a key space that fits the
	// caches (hits at the nodes), after a warm-up run.
	hitKeys int
}

func run() error {
	o := options{requests: map[string]int{}}
	flag.StringVar(&o.distcache, "distcache", "bin/distcache", "the distcache binary")
	flag.StringVar(&o.clusterFile, "f", "hack/gatewaybench/cluster.yaml", "the cluster's YAML")
	flag.StringVar(&o.runDir, "run-dir", "out/gatewaybench/run", "the cluster's run directory")
	flag.StringVar(&o.out, "out", "out/gatewaybench/report.md", "where the table is written")
	flag.IntVar(&o.keys, "keys", 100_000, "key space of redis-benchmark -r")
	direct := flag.Int("requests-direct", 2_000_000, "requests per run against Redis directly")
	proxy := flag.Int("requests-twemproxy", 1_000_000, "requests per run through twemproxy")
	gw := flag.Int("requests-gateway", 200_000, "requests per run through the gateway")
	flag.BoolVar(&o.floor, "floor", false, "also measure the floor: the smallest event-loop gateway (GETs only)")
	flag.IntVar(&o.hitKeys, "hit-keys", 0, "also measure GETs over this many keys, which fit the caches")
	floorServe := flag.String("floor-serve", "", "serve the floor on this address (the floor's own process)")
	floorMap := flag.String("floor-map", "", "the partition map the floor routes by")
	tests := flag.String("tests", "set,get,incr", "redis-benchmark's tests (-t) to run, comma-separated")
	flag.Parse()
	o.tests = strings.Split(*tests, ",")
	if *floorServe != "" {
		return serveFloor(*floorMap, *floorServe)
	}
	o.requests = map[string]int{"redis": *direct, "twemproxy": *proxy, "gateway": *gw, "floor": *gw}
	o.pipelines = []int{1, 16}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	targets, cleanup, err := o.start(ctx)
	defer cleanup()
	if err != nil {
		return err
	}
	// The floor runs after the others: its reads go through the cache
	// nodes, whose shims then count the nodes as holders of the keys read,
	// and the gateway's first write of each such key would pay a coherence
	// round trip the gateway's own reads (direct) do not cause.
	var others, floor []target
	for _, t := range targets {
		if t.name == "floor" {
			floor = append(floor, t)
		} else {
			others = append(others, t)
		}
	}
	var rows []row
	for _, group := range [][]target{others, floor} {
		for _, p := range o.pipelines {
			for _, t := range group {
				rs, err := o.measureTarget(ctx, t, p)
				if err != nil {
					return err
				}
				rows = append(rows, rs...)
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.pipeline, b.pipeline) })
	if o.hitKeys > 0 {
		hits, err := o.measureHits(ctx, targets)
		if err != nil {
			return err
		}
		rows = append(rows, hits...)
	}
	table := render(rows)
	fmt.Print(table)
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return fmt.Errorf("cannot write %s: %w", o.out, err)
	}
	return os.WriteFile(o.out, []byte(table), 0o644)
}

// measureTarget runs o.tests (SET, GET and INCR by default) against t at
// pipeline depth p (GET only for the floor) and returns a row each.
func (o options) measureTarget(ctx context.Context, t target, p int) ([]row, error) {
	var rows []row
	for _, test := range o.tests {
		if test != "get" && t.name == "floor" {
			continue // the floor serves GETs only
		}
		r, err := measure(ctx, t, benchRun{addr: t.addr, test: test, pipeline: p, requests: o.requests[t.name]}, o.keys)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(os.Stderr, r.line())
		rows = append(rows, r)
	}
	return rows, nil
}

// target is one system redis-benchmark drives.
type target struct {
	name  string
	addr  string
	proxy group // the proxy process (for Redis: the server itself)
	all   group // every process a request passes
}

// start brings up the cluster and twemproxy; cleanup stops both.
func (o options) start(ctx context.Context) ([]target, func(), error) {
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	st, down, err := localcluster.Up(ctx, o.distcache, o.clusterFile, o.runDir)
	undo = append(undo, down)
	if err != nil {
		return nil, cleanup, err
	}
	var redises, cluster group
	var redisAddrs []string
	gw := target{name: "gateway"}
	for _, p := range st.Processes {
		switch p.Kind {
		case "redis":
			redises = append(redises, p.PID)
			redisAddrs = append(redisAddrs, p.Addr)
		case "gateway":
			gw.addr, gw.proxy = p.Addr, group{p.PID}
		}
		if p.Kind == "redis" || p.Kind == "shim" || p.Kind == "node" || p.Kind == "gateway" {
			cluster = append(cluster, p.PID)
		}
	}
	if gw.addr == "" || len(redisAddrs) == 0 {
		return nil, cleanup, fmt.Errorf("cannot find the gateway and the Redis servers in %s's status", st.Cluster)
	}
	gw.all = cluster
	dir, err := os.MkdirTemp("", "gatewaybench-")
	if err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { _ = os.RemoveAll(dir) })
	tp, err := twemproxy.Start(ctx, twemproxy.Config{Servers: redisAddrs, Dir: dir})
	if err != nil {
		return nil, cleanup, err
	}
	undo = append(undo, func() { _ = tp.Stop() })
	targets := []target{
		{name: "redis", addr: redisAddrs[0], proxy: redises[:1], all: redises[:1]},
		{name: "twemproxy", addr: tp.Addr(), proxy: group{tp.PID()}, all: append(group{tp.PID()}, redises...)},
		gw,
	}
	if o.floor {
		fl, stop, err := startFloor(ctx, st.MapFile, gw)
		undo = append(undo, stop)
		if err != nil {
			return nil, cleanup, err
		}
		targets = append(targets, fl)
	}
	return targets, cleanup, nil
}

// row is one measured run.
type row struct {
	target, test  string
	pipeline      int
	res           benchResult
	proxyCPU, all float64 // CPU seconds over the run
	requests      int
}

// measure runs b against t and reads t's CPU time around it.
func measure(ctx context.Context, t target, b benchRun, keys int) (row, error) {
	p0, err := t.proxy.cpu()
	if err != nil {
		return row{}, err
	}
	a0, err := t.all.cpu()
	if err != nil {
		return row{}, err
	}
	res, err := b.run(ctx, keys)
	if err != nil {
		return row{}, err
	}
	p1, err := t.proxy.cpu()
	if err != nil {
		return row{}, err
	}
	a1, err := t.all.cpu()
	if err != nil {
		return row{}, err
	}
	return row{target: t.name, test: strings.ToUpper(b.test), pipeline: b.pipeline, res: res,
		proxyCPU: p1 - p0, all: a1 - a0, requests: b.requests}, nil
}

// microsPerRequest is CPU microseconds per request.
func (r row) microsPerRequest(cpu float64) float64 { return cpu / float64(r.requests) * 1e6 }

// perProxyCore is requests per second per core the proxy used.
func (r row) perProxyCore() float64 {
	if r.proxyCPU == 0 {
		return 0
	}
	return float64(r.requests) / r.proxyCPU
}

func (r row) line() string {
	return fmt.Sprintf("%-9s %-3s -P %-2d %10.0f req/s  proxy %6.2f µs/req  all %6.2f µs/req  %10.0f req/s per proxy core",
		r.target, r.test, r.pipeline, r.res.rps, r.microsPerRequest(r.proxyCPU), r.microsPerRequest(r.all), r.perProxyCore())
}

// render is the Markdown table of rows, with each row's CPU per request
// against direct Redis's for the same command and pipeline.
func render(rows []row) string {
	base := map[string]float64{}
	for _, r := range rows {
		if r.target == "redis" {
			base[fmt.Sprint(r.test, r.pipeline)] = r.microsPerRequest(r.all)
		}
	}
	var b strings.Builder
	b.WriteString("| target | command | -P | requests/s | p50 ms | p99 ms | proxy CPU µs/request | requests/s per proxy core | all CPU µs/request | all CPU vs direct Redis |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		vs := "1.00×"
		if bs := base[fmt.Sprint(r.test, r.pipeline)]; r.target != "redis" && bs > 0 {
			vs = fmt.Sprintf("%.2f×", r.microsPerRequest(r.all)/bs)
		} else if r.target != "redis" {
			vs = "–" // no direct run of this command
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.2f | %.2f | %.2f | %.0f | %.2f | %s |\n", r.target, r.test, r.pipeline,
			r.res.rps, r.res.p50ms, r.res.p99ms, r.microsPerRequest(r.proxyCPU), r.perProxyCore(), r.microsPerRequest(r.all), vs)
	}
	return b.String()
}

// splitAddr splits host:port.
func splitAddr(addr string) (host, port string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "6379"
	}
	return host, port
}
