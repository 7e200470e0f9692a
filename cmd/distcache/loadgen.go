package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/loadgen"
	"github.com/distcache/distcache/workload"
)

// loadgenOptions are the flags of `distcache loadgen`.
type loadgenOptions struct {
	cfg       loadgen.Config
	target    string
	keys      int
	maps      mapSourceFlags
	key       dataKey
	valueSize int
	warmup    time.Duration
}

func newLoadgenCommand() *cobra.Command {
	o := &loadgenOptions{}
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "Drive one cache node or shim with GETs and report replies per second and latency",
		Long: `Drive one data-plane endpoint with a closed loop of GETs for the keys
key:0 … key:N-1 (uniformly at random), sent and received in batches, and report
replies per second, hit ratio and latency percentiles. With --map, the keys are
first written through the client library (values of --value-size bytes), and a
--warmup phase lets a cache node detect and insert them before measuring.`,
		Example: `  distcache loadgen --target 127.0.0.1:7101 --keys 1000 --map map.json --warmup 3s --duration 10s`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.target, "target", "", "UDP address of the cache node or shim to drive")
	f.IntVar(&o.keys, "keys", 1000, "number of distinct keys")
	f.IntVar(&o.cfg.Concurrency, "concurrency", loadgen.DefaultConcurrency, "outstanding requests")
	f.IntVar(&o.cfg.Batch, "batch", loadgen.DefaultBatch, "datagrams per sendmmsg/recvmmsg call (1: one per call)")
	f.IntVar(&o.cfg.Bundle, "bundle", 0, "GETs per request datagram, as one bundle (the datagram's form of a pipeline; 0: one each)")
	f.DurationVar(&o.cfg.Duration, "duration", 10*time.Second, "how long to measure")
	f.Uint64Var(&o.cfg.Requests, "requests", 0, "stop after this many replies (0: no bound)")
	f.DurationVar(&o.cfg.Timeout, "timeout", loadgen.DefaultTimeout, "a request unanswered this long is counted lost")
	o.maps.addFlags(cmd, "partition map file; when given (or --map-configmap), the keys are written first through the client library", false)
	o.key.addFlag(cmd)
	f.IntVar(&o.valueSize, "value-size", 64, "value size in bytes for --map")
	f.DurationVar(&o.warmup, "warmup", 0, "unmeasured load before measuring (lets a cache node insert the hot keys)")
	_ = cmd.MarkFlagRequired("target")
	return cmd
}

func (o *loadgenOptions) run(cmd *cobra.Command) error {
	target, err := netip.ParseAddrPort(o.target)
	if err != nil {
		return fmt.Errorf("cannot parse --target %q: %w", o.target, err)
	}
	if o.keys < 1 {
		return fmt.Errorf("cannot run load: --keys %d < 1", o.keys)
	}
	o.cfg.Target = target
	for i := range o.keys {
		o.cfg.Keys = append(o.cfg.Keys, workload.Key(uint64(i)))
	}
	ctx := cmd.Context()
	if o.maps.set() {
		if err := o.fill(ctx); err != nil {
			return err
		}
		cmd.Printf("wrote %d keys of %d bytes\n", o.keys, o.valueSize)
	}
	if o.warmup > 0 {
		w := o.cfg
		w.Duration, w.Requests = o.warmup, 0
		res, err := loadgen.Run(ctx, w)
		if err != nil {
			return err
		}
		cmd.Printf("warm-up: %.0f replies/s, hit ratio %.3f\n", res.Rate(), res.HitRatio())
	}
	res, err := loadgen.Run(ctx, o.cfg)
	if err != nil {
		return err
	}
	cmd.Printf("target %s: %d replies in %.2fs = %.0f replies/s; hit ratio %.4f; not found %d, errors %d, lost %d\n",
		target, res.Replies, res.Elapsed.Seconds(), res.Rate(), res.HitRatio(), res.NotFound, res.Errors, res.Lost)
	cmd.Printf("latency p50 %v p99 %v p99.9 %v (concurrency %d, batch %d, bundle %d)\n",
		res.Latency.Quantile(0.5), res.Latency.Quantile(0.99), res.Latency.Quantile(0.999), o.cfg.Concurrency, o.cfg.Batch, o.cfg.Bundle)
	return nil
}

// fill writes every key through the client library.
func (o *loadgenOptions) fill(ctx context.Context) error {
	w, err := o.maps.open(ctx, nil)
	if err != nil {
		return err
	}
	if err := o.key.load(); err != nil {
		return err
	}
	var cfg client.Config
	o.key.apply(&cfg.Transport)
	c, err := client.New(cfg, w.Current())
	if err != nil {
		return err
	}
	defer c.Close()
	value := bytes.Repeat([]byte("v"), o.valueSize)
	for _, k := range o.cfg.Keys {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := c.Put(wctx, k, value)
		cancel()
		if err != nil {
			return fmt.Errorf("cannot fill key %q: %w", k, err)
		}
	}
	return nil
}
