package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/softswitch"
	"github.com/distcache/distcache/softswitch/gnmiserver"
	"github.com/distcache/distcache/softswitch/p4rtserver"
)

func newSwitchCommand() *cobra.Command {
	var (
		addr, p4rtAddr, gnmiAddr string
		metricsAddr              string
		tlsCert, tlsKey          string
		logLevel                 string
		cfg                      softswitch.Config
		deviceID                 uint64
		program                  string
	)
	cmd := &cobra.Command{
		Use:   "switch",
		Short: "Run the software switch: a P4 program of stratum_pipelines on UDP ports, programmed over P4Runtime and watched over gNMI",
		Long: `Run a software switch for a switch-backed cache layer where no programmable
switch exists. It runs the cache switch program of stratum_pipelines (or,
with --program client_leaf, the client leaf) on UDP ports of --addr:
--base-port receives coherence messages (it is the switch's member
address), --base-port+1+s the reads of storage shard s. It starts without a
pipeline: its controller pushes the program's P4Info over P4Runtime (the
switch refuses the other program's), installs table entries and, for the
cache switch, renews its serving lease. docs/switches.md describes it.`,
		Example: `  distcache switch --base-port 7400 --read-ports 8 --p4runtime-addr 127.0.0.1:9559 --gnmi-addr 127.0.0.1:9339`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logLevel)
			if err != nil {
				return err
			}
			if cfg.Addr, err = netip.ParseAddr(addr); err != nil {
				return fmt.Errorf("cannot parse --addr: %w", err)
			}
			creds, err := serverTLS(tlsCert, tlsKey)
			if err != nil {
				return err
			}
			var ok bool
			if cfg.Program, ok = softswitch.Programs[program]; !ok {
				return fmt.Errorf("cannot run program %q: --program is one of %v", program, softswitch.ProgramNames())
			}
			cfg.Logger = log
			sw, err := softswitch.New(cfg)
			if err != nil {
				return err
			}
			defer sw.Close()
			reg, wrapped := metrics.Registry("switch", "")
			if err := sw.RegisterMetrics(wrapped); err != nil {
				return err
			}
			ms, err := metrics.Listen(metricsAddr, reg, sw.Healthy)
			if err != nil {
				return err
			}
			defer func() { _ = ms.Close(context.Background()) }()
			var opts []grpc.ServerOption
			if creds != nil {
				opts = append(opts, grpc.Creds(creds))
			}
			p4rt := p4rtserver.New(sw, p4rtserver.Config{DeviceID: deviceID, Logger: log})
			defer p4rt.Close()
			servers := []struct {
				name, addr string
				register   func(*grpc.Server)
			}{
				// As Stratum, the P4Runtime port serves gNMI too.
				{"P4Runtime", p4rtAddr, func(g *grpc.Server) { p4rt.Register(g); gnmiserver.New(sw).Register(g) }},
				{"gNMI", gnmiAddr, gnmiserver.New(sw).Register},
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			errs := make(chan error, len(servers))
			for _, s := range servers {
				lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.addr)
				if err != nil {
					return fmt.Errorf("cannot serve %s on %s: %w", s.name, s.addr, err)
				}
				g := grpc.NewServer(opts...)
				s.register(g)
				defer g.Stop()
				go func() { errs <- g.Serve(lis) }()
				log.Info("serving", "api", s.name, "addr", lis.Addr().String())
			}
			log.Info("software switch running", "program", cfg.Program, "coherence", sw.Addr(), "read_ports", cfg.ReadPorts, "device_id", deviceID, "metrics", ms.Addr())
			select {
			case <-ctx.Done():
				return nil
			case err := <-errs:
				return fmt.Errorf("cannot serve the switch's APIs: %w", err)
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1", "IPv4 address of the switch's UDP ports")
	f.Uint16Var(&cfg.BasePort, "base-port", 0, "the coherence port (the member's address); read port of shard s is base-port+1+s")
	f.IntVar(&cfg.ReadPorts, "read-ports", 64, "read ports: the storage shards the switch can front")
	f.StringVar(&program, "program", "cache_switch", fmt.Sprintf("the P4 program the switch runs: one of %v", softswitch.ProgramNames()))
	f.IntVar(&cfg.Batch, "batch", softswitch.DefaultBatch, "datagrams received per system call")
	f.StringVar(&p4rtAddr, "p4runtime-addr", "127.0.0.1:9559", "TCP address of the P4Runtime service")
	f.StringVar(&gnmiAddr, "gnmi-addr", "127.0.0.1:9339", "TCP address of the gNMI service")
	f.Uint64Var(&deviceID, "device-id", 1, "P4Runtime device id")
	f.StringVar(&tlsCert, "tls-cert", "", "PEM certificate of the P4Runtime and gNMI services (with --tls-key; plaintext without)")
	f.StringVar(&tlsKey, "tls-key", "", "PEM key of --tls-cert")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:0", "address of the /metrics and /healthz endpoint (healthy once a pipeline is installed)")
	_ = cmd.MarkFlagRequired("base-port")
	return cmd
}

// serverTLS is the gRPC services' TLS, or nil without a certificate.
func serverTLS(cert, key string) (credentials.TransportCredentials, error) {
	if (cert == "") != (key == "") {
		return nil, errors.New("cannot serve TLS: --tls-cert and --tls-key go together")
	}
	if cert == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("cannot load the TLS key pair: %w", err)
	}
	return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}), nil
}
