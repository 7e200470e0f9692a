package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/fleet"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

func newFabricCommand() *cobra.Command {
	var (
		maps                  mapSourceFlags
		mapPoll               time.Duration
		metricsAddr, logLevel string
		switches              []string
		cfg                   cacheswitch.Config
		interval              time.Duration
		election              uint64
		pipeline              string
	)
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "Program a fabric's cache switches over P4Runtime from the partition map (the stratum driver)",
		Long: `Run the controller of a fabric's switch-backed cache members: for each
--switch, a P4Runtime session that claims the switch's mastership, pushes the
cache switch program — or, when the switch runs it already (this process
restarted), takes the switch over with its cache —, installs the member's
addresses and the shims' routes from the partition map, renews the switch's
serving lease on every read of the map, and inserts the hot keys the switch
reports. 'distcache up' starts it for a standalone cluster with a
switch-backed layer; docs/switches.md describes it.`,
		Example: `  distcache fabric --map run/partition-map.json --switch shop-spine-0=127.0.0.1:9559`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			w, err := maps.open(cmd.Context(), log)
			if err != nil {
				return err
			}
			program, ok := pipelines.Pipelines[pipeline]
			if !ok {
				return fmt.Errorf("cannot program the switches: --pipeline %q is not one of %s", pipeline, strings.Join(pipelines.PipelineNames(), ", "))
			}
			if cfg.Info, err = pipelines.ProgramP4Info(program); err != nil {
				return err
			}
			var members []fleet.Switch
			for _, s := range switches {
				member, addr, gnmi, device, err := parseSwitchFlag(s)
				if err != nil {
					return err
				}
				members = append(members, fleet.Switch{Member: member, P4Runtime: addr, DeviceID: device, GNMI: gnmi})
			}
			f, _ := fleet.Build(members, fleet.Config{Controller: cfg, Interval: interval, ElectionID: election, Leader: true, Logger: log})
			reg, wrapped := metrics.Registry("fabric", "")
			if err := metrics.Register(wrapped, f.Collector(nil)); err != nil {
				return err
			}
			ms, err := metrics.Listen(metricsAddr, reg, f.Healthy)
			if err != nil {
				return err
			}
			defer func() { _ = ms.Close(context.Background()) }()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go f.Follow(ctx, w, mapPoll)
			log.Info("programming switches", "switches", len(members), "metrics", ms.Addr(), "map_version", w.Current().Version())
			f.Run(ctx)
			return nil
		},
	}
	maps.addFlags(cmd, "partition map file (standalone mode's); its reads renew the switches' leases", true)
	fl := cmd.Flags()
	fl.DurationVar(&mapPoll, "map-poll", mapwatch.DefaultInterval, "how often the map is read: each read renews the switches' serving leases")
	fl.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:0", "address of the /metrics and /healthz endpoint")
	fl.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringArrayVar(&switches, "switch", nil, "a switch member and its P4Runtime endpoint: MEMBER=HOST:PORT[,device=N][,gnmi=HOST:PORT] (repeatable; with gnmi, its ports are watched)")
	fl.DurationVar(&cfg.Lease, "serving-lease", cacheswitch.DefaultLease, servingLeaseHelp)
	fl.IntVar(&cfg.Capacity, "capacity", cacheswitch.DefaultCapacity, "keys each switch caches")
	fl.Uint16Var(&cfg.HotThreshold, "hot-threshold", cacheswitch.DefaultHotThreshold, "reads of an uncached key in an interval that make the switch report it")
	fl.DurationVar(&interval, "interval", cacheswitch.DefaultInterval, "hot-key insertion period")
	fl.Uint64Var(&election, "election-id", 1, "the low 64 bits of the controller's P4Runtime election ids (it claims each switch above the highest id the switch has seen)")
	fl.StringVar(&pipeline, "pipeline", "distcache-v1model", "the pipeline pushed to the switches: distcache-v1model (stratum-bmv2 and the software switch) or distcache-tna (Tofino)")
	_ = cmd.MarkFlagRequired("switch")
	return cmd
}

// parseSwitchFlag reads MEMBER=HOST:PORT[,device=N][,gnmi=HOST:PORT].
func parseSwitchFlag(s string) (member, addr, gnmi string, device uint64, err error) {
	member, rest, ok := strings.Cut(s, "=")
	if !ok || member == "" || rest == "" {
		return "", "", "", 0, fmt.Errorf("cannot parse --switch %q: want MEMBER=HOST:PORT[,device=N][,gnmi=HOST:PORT]", s)
	}
	opts := strings.Split(rest, ",")
	addr, device = opts[0], 1
	for _, opt := range opts[1:] {
		switch k, v, _ := strings.Cut(opt, "="); k {
		case "device":
			if device, err = strconv.ParseUint(v, 10, 64); err != nil || device == 0 {
				return "", "", "", 0, fmt.Errorf("cannot parse --switch %q: device %q is not a positive number", s, v)
			}
		case "gnmi":
			gnmi = v
		default:
			return "", "", "", 0, fmt.Errorf("cannot parse --switch %q: unknown option %q", s, opt)
		}
	}
	return member, addr, gnmi, device, nil
}
