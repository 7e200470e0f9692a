package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/dataplane/shim"
)

func newShimCommand() *cobra.Command {
	var (
		o     serveOptions
		shard string
		conn  redisconn.Settings
		sync  credentialsSync
		cfg   shim.Config
	)
	cmd := &cobra.Command{
		Use:   "shim",
		Short: "Run a storage shim in front of one redis-server: serve misses, apply writes with two-phase coherence",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, w, err := o.load(cmd.Context())
			if err != nil {
				return err
			}
			m := w.Current().Map()
			r, i, ok := m.StorageShard(shard)
			if !ok {
				return fmt.Errorf("cannot run shim: shard %q is not in the partition map %s", shard, w.Source())
			}
			cfg.Shard = shard
			cfg.Transport = o.transport(m.Storage.Racks[r].Shards[i].Address, log)
			cfg.Transport.Sender = "shim/" + shard // one sender across restarts
			if cfg.Redis, err = conn.Options(); err != nil {
				return fmt.Errorf("cannot run shim: %w", err)
			}
			reg, wrapped := metrics.Registry("shim", shard)
			// The shim adds its shard to its own logs; the process's logs
			// and Redis's get it here.
			cfg.Registerer, cfg.Logger = wrapped, log
			if err := o.key.register(wrapped); err != nil {
				return err
			}
			log = log.With("shard", shard)
			redis.SetLogger(redisLogger{log})
			s, err := shim.New(cfg)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			wait, err := sync.start(ctx, conn, log)
			if err != nil {
				return err
			}
			defer wait()
			defer cancel()
			healthy := func() error {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				return s.Healthy(ctx)
			}
			return serve(cmd, &o, w, s, reg, healthy, log, "addr", s.Addr(), "redis", conn.Addr, "redis_tls", conn.TLS)
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&shard, "shard", "", "this shim's storage shard name in the partition map")
	conn.AddFlags(f)
	sync.addFlags(f)
	f.DurationVar(&cfg.InvalidateTimeout, "invalidate-timeout", 0, "phase-1 budget of a write (default 2s)")
	f.DurationVar(&cfg.PrevMapGrace, "prev-map-grace", 0, "how long owners under replaced maps are still invalidated (default 2m; at least --serving-lease plus --map-delivery-lag)")
	f.DurationVar(&cfg.Lease, "serving-lease", shim.DefaultLease, servingLeaseHelp)
	f.DurationVar(&cfg.MapDeliveryLag, "map-delivery-lag", 0,
		"how old a cache node's copy of the map can be when it reads it: 0 for a file written on the node's host, the kubelet's refresh delay for a mounted ConfigMap")
	f.Float64Var(&cfg.EmulatedRate, "emulated-capacity", 0, emulatedCapacityHelp)
	_ = cmd.MarkFlagRequired("shard")
	return cmd
}

// redisLogger routes go-redis's own messages (pool dial failures while Redis
// is down, …) into the structured log at debug level: the shim already logs
// and counts every failed command.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...), "component", "go-redis")
}
