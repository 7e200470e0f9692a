package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
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
		clientLeaves          []string
		cfg                   cacheswitch.Config
		interval              time.Duration
		election              uint64
		pf                    pipelineFlags
	)
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "Program a fabric's cache switches and client leaves over P4Runtime from the partition map (the stratum driver)",
		Long: `Run the controller of a fabric's switch-backed cache members: for each
--switch, a P4Runtime session that claims the switch's mastership, pushes the
cache switch program — or, when the switch runs it already (this process
restarted), takes the switch over with its cache —, installs the member's
addresses and the shims' routes from the partition map, renews the switch's
serving lease on every read of the map, and inserts the hot keys the switch
reports. For each --client-leaf, a session that pushes the client leaf
program and keeps its tables (the read ports, the spine layer's ring and
each shard's storage-leaf switch) from every read of the map; a client leaf
caches nothing and has no lease. 'distcache up' starts it for a standalone
cluster with a switch-backed layer; docs/switches.md describes it.

The switches get the P4Info of --pipeline and no device config, which
only the software switch runs, or a compiled build: --p4info and
--device-config, or --pipeline-image. Its P4Info is checked before
anything is pushed. On SIGHUP the build is read again: a new build of the
same P4Info reaches the switches in their sessions (RECONCILE_AND_COMMIT),
keeping their cached keys; another P4Info is refused.`,
		Example: `  distcache fabric --map run/partition-map.json --switch shop-spine-0=127.0.0.1:9559
  distcache fabric --map run/partition-map.json --switch shop-spine-0=127.0.0.1:9559 --client-leaf shop-c0=127.0.0.1:9561,data=127.0.0.1:7600,device=3
  distcache fabric --map run/partition-map.json --switch shop-spine-0=192.0.2.7:9559 \
      --p4info out/p4/v1model-cache_switch/cache_switch.p4info.txt --device-config out/p4/v1model-cache_switch/cache_switch.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			w, err := maps.open(cmd.Context(), log)
			if err != nil {
				return err
			}
			built, source, err := pf.load(cmd.Context())
			if err != nil {
				return err
			}
			members, leafInfo, err := fabricSwitches(switches, clientLeaves, pf.name)
			if err != nil {
				return err
			}
			f, _ := fleet.Build(members, fleet.Config{Pipeline: built, Controller: cfg, ClientLeafInfo: leafInfo, Interval: interval,
				ElectionID: election, Leader: true, Logger: log})
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
			reloads := pf.reloadOnHangup(ctx, f, built, log)
			log.Info("programming switches", "switches", len(members), "metrics", ms.Addr(), "map_version", w.Current().Version(),
				"pipeline_source", source, "cookie", built.CookieHex(), "device_config_bytes", len(built.DeviceConfig))
			f.Run(ctx)
			reloads()
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
	pf.add(fl)
	fl.StringArrayVar(&clientLeaves, "client-leaf", nil, "a client leaf and its P4Runtime endpoint: NAME=HOST:PORT,data=IP:PORT[,device=N][,gnmi=HOST:PORT] "+
		"(repeatable): it runs the pipeline's client leaf program, its read ports at data's port + 1 + shard, its tables kept from every map read")
	cmd.MarkFlagsOneRequired("switch", "client-leaf")
	return cmd
}

// fabricSwitches are the fleet's switches of the --switch and
// --client-leaf flags, and the P4Info of pipeline's client leaf program
// when there are client leaves.
func fabricSwitches(switches, clientLeaves []string, pipeline string) ([]fleet.Switch, *p4configv1.P4Info, error) {
	var out []fleet.Switch
	for _, s := range switches {
		sw, err := parseSwitchFlag("switch", s)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, sw)
	}
	if len(clientLeaves) == 0 {
		return out, nil, nil
	}
	for _, s := range clientLeaves {
		sw, err := parseSwitchFlag("client-leaf", s)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, sw)
	}
	info, err := pipelines.ProgramP4Info(pipelines.ClientLeafPipelines[pipeline])
	if err != nil {
		return nil, nil, fmt.Errorf("cannot program the client leaves: %w", err)
	}
	return out, info, nil
}

// parseSwitchFlag reads --switch MEMBER=HOST:PORT[,device=N][,gnmi=HOST:PORT],
// or --client-leaf NAME=HOST:PORT,data=IP:PORT[,device=N][,gnmi=HOST:PORT]
// (flag "client-leaf"), whose data address is required.
func parseSwitchFlag(flag, s string) (fleet.Switch, error) {
	usage := "MEMBER=HOST:PORT[,device=N][,gnmi=HOST:PORT]"
	if flag == "client-leaf" {
		usage = "NAME=HOST:PORT,data=IP:PORT[,device=N][,gnmi=HOST:PORT]"
	}
	member, rest, ok := strings.Cut(s, "=")
	if !ok || member == "" || rest == "" {
		return fleet.Switch{}, fmt.Errorf("cannot parse --%s %q: want %s", flag, s, usage)
	}
	opts := strings.Split(rest, ",")
	sw := fleet.Switch{Member: member, P4Runtime: opts[0], DeviceID: 1}
	var err error
	for _, opt := range opts[1:] {
		switch k, v, _ := strings.Cut(opt, "="); {
		case k == "device":
			if sw.DeviceID, err = strconv.ParseUint(v, 10, 64); err != nil || sw.DeviceID == 0 {
				return fleet.Switch{}, fmt.Errorf("cannot parse --%s %q: device %q is not a positive number", flag, s, v)
			}
		case k == "gnmi":
			sw.GNMI = v
		case k == "data" && flag == "client-leaf":
			if sw.ClientLeaf, err = netip.ParseAddrPort(v); err != nil || !sw.ClientLeaf.Addr().Is4() {
				return fleet.Switch{}, fmt.Errorf("cannot parse --%s %q: data %q is not an IPv4 address and port", flag, s, v)
			}
		default:
			return fleet.Switch{}, fmt.Errorf("cannot parse --%s %q: unknown option %q", flag, s, opt)
		}
	}
	if flag == "client-leaf" && !sw.ClientLeaf.IsValid() {
		return fleet.Switch{}, fmt.Errorf("cannot parse --%s %q: want %s", flag, s, usage)
	}
	return sw, nil
}
