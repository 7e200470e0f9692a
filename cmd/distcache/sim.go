package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/sim"
)

type simOptions struct {
	experiment string
	out        string
	quick      bool
	cfg        sim.Config
	lease      time.Duration
	renewals   int
	hosts      []int
	zones      int
	sample     int
}

func newSimCommand() *cobra.Command {
	o := simOptions{cfg: sim.Default()}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Reproduce the DistCache paper's evaluation (throughput vs skew, cache size, scale, writes; failure timeline)",
		Long: `sim places keys with the real placement core, routes reads with the real
power-of-k router fed only by simulated telemetry, and reports each strategy's
throughput: the largest offered rate at which no cache node and no storage
server is over capacity, in units of one storage server's throughput.

Each experiment writes DIR/<experiment>.csv, .png and .md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSim(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.experiment, "experiment", "skew", "experiment to run: skew, cachesize, scale, writes, failure or all; or leases: what shim-granted leases cost in messages; or domains: keys left without a cached copy by a host's loss, and cross-zone reads")
	f.IntSliceVar(&o.hosts, "hosts", []int{1000, 250, 100, 32, 3}, "with --experiment domains: the host counts the members are spread over")
	f.IntVar(&o.zones, "zones", 3, "with --experiment domains: zones the hosts and clients are spread over")
	f.IntVar(&o.sample, "sample", 200_000, "with --experiment domains: keys sampled for the host losses")
	f.DurationVar(&o.lease, "lease", time.Second, "with --experiment leases: the serving lease")
	f.IntVar(&o.renewals, "renewals", 3, "with --experiment leases: renewals per lease of a lease no other message renews")
	f.StringVar(&o.out, "out", "out/sim", "directory for the CSV, PNG and markdown outputs")
	f.BoolVar(&o.quick, "quick", false, "smaller key space and query stream: a meaningful run in under a minute")
	c := &o.cfg
	f.IntVar(&c.Spines, "spines", c.Spines, "upper-layer cache nodes")
	f.IntVar(&c.Racks, "racks", c.Racks, "storage racks, each with one leaf cache node")
	f.IntVar(&c.ServersPerRack, "servers-per-rack", c.ServersPerRack, "storage servers per rack")
	f.IntVar(&c.CachePerNode, "cache-per-node", c.CachePerNode, "hot objects per cache node")
	f.Uint64Var(&c.Keys, "keys", c.Keys, "key space size")
	f.Float64Var(&c.Skew, "skew", c.Skew, "Zipf exponent (0 = uniform)")
	f.Float64Var(&c.WriteRatio, "write-ratio", c.WriteRatio, "fraction of queries that are writes")
	f.Float64Var(&c.CoherenceCost, "coherence-cost", c.CoherenceCost, "server work per cached copy per write, in queries")
	f.IntVar(&c.MaxCopies, "max-copies", c.MaxCopies, "most copies of one key under the adaptive strategy (0: every spine and the leaf)")
	f.IntVar(&c.Routing.Queries, "queries", c.Routing.Queries, "length of the query stream that drives the router")
	f.IntVar(&c.Routing.Warmup, "warmup", c.Routing.Warmup, "initial queries of the stream whose routing is not counted")
	f.IntVar(&c.Routing.Clients, "clients", c.Routing.Clients, "independent senders, each learning loads only from its own replies")
	f.IntVar(&c.Routing.TelemetryDelay, "telemetry-delay", c.Routing.TelemetryDelay, "reply delay before a sender sees a load, in query arrivals")
	f.IntVar(&c.Routing.LoadWindow, "load-window", c.Routing.LoadWindow, "time constant of the load a cache node reports, in query arrivals")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the placement, scrambling and query stream")
	return cmd
}

func runSim(w io.Writer, o simOptions) error {
	switch o.experiment {
	case "leases":
		return runLeases(w, o)
	case "domains":
		return runDomains(w, o)
	}
	exps := sim.Experiments
	if o.experiment != "all" {
		e, err := sim.Lookup(o.experiment)
		if err != nil {
			return err
		}
		exps = []sim.Experiment{e}
	}
	cfg := o.cfg
	if o.quick {
		cfg = sim.Quick(cfg)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	for _, e := range exps {
		start := time.Now()
		fmt.Fprintf(w, "running %s (paper figure %s)\n", e.Name, e.Figure)
		results, err := e.Run(cfg, o.quick, func(msg string) { fmt.Fprintf(w, "  %s\n", msg) })
		if err != nil {
			return err
		}
		if err := sim.WriteReport(o.out, e, results); err != nil {
			return err
		}
		fmt.Fprintf(w, "%s done in %s: %s\n", e.Name, time.Since(start).Round(time.Millisecond),
			filepath.Join(o.out, e.Name+".{csv,png,md}"))
	}
	return nil
}

// runLeases prints what leases granted by the shims would cost o's
// configuration in messages (sim.Leases).
func runLeases(w io.Writer, o simOptions) error {
	cfg := o.cfg
	if o.quick {
		cfg = sim.Quick(cfg)
	}
	l, err := sim.Leases(cfg, o.lease, o.renewals)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d cache nodes, %d shards, %d hot keys per node, lease %v renewed %d times\n",
		l.Nodes, l.Shards, cfg.CachePerNode, l.Lease, l.Renewals)
	fmt.Fprintf(w, "| leases | most per node | most per shard | messages/s in all | busiest node | busiest shard |\n")
	fmt.Fprintf(w, "|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(w, "| %d | %d | %d | %.0f | %.0f | %.0f |\n",
		l.Pairs, l.NodeMaxPairs, l.ShardMaxPairs, l.Total(), l.NodeMax(), l.ShardMax())
	return nil
}
