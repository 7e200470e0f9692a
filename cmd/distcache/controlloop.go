package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/standalone/controlloop"
)

func newControlLoopCommand() *cobra.Command {
	var configPath, metricsAddr, logLevel string
	cmd := &cobra.Command{
		Use:   "controlloop --config FILE",
		Short: "Run a standalone cluster's control loop (internal: distcache up starts it)",
		Long: `controlloop runs the control loop of a standalone cluster: it probes every
cache node's /healthz, fences, fails and restores members with the cluster's
failover policy, and publishes each new partition map version to the map
file. 'distcache up' starts it as one of the cluster's supervised processes,
with the configuration file it writes into the run directory
(controlloop.json); it is not meant to be run by hand.

It resumes from the map version published in the map file, appends every
member state change as one JSON line to the events file, and serves /healthz
and /metrics (distcache_controlloop_*) on --metrics-addr.`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			cfg, err := controlloop.LoadConfig(configPath)
			if err != nil {
				return err
			}
			reg, wrapped := metrics.Registry("controlloop", "")
			loop, err := controlloop.Open(cfg, log, wrapped)
			if err != nil {
				return err
			}
			ms, err := metrics.Listen(metricsAddr, reg, loop.Healthy)
			if err != nil {
				return err
			}
			defer func() { _ = ms.Close(context.Background()) }()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log.Info("control loop running", "map", cfg.MapFile, "map_version", loop.Map().Version, "members", len(cfg.Members),
				"interval", loop.Interval(), "metrics", ms.Addr())
			loop.Run(ctx)
			log.Info("stopping")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configPath, "config", "", "the control loop's configuration file (written by distcache up)")
	f.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:0", "address of the /metrics and /healthz endpoint")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}
