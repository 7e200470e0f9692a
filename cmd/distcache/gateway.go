package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redisconn"
	"github.com/distcache/distcache/gateway"
)

func newGatewayCommand() *cobra.Command {
	var (
		o          serveOptions
		redisAddr  string
		cfg        gateway.Config
		clientAddr string
		usersDir   string
		tlsCert    string
		tlsKey     string
		zone, host string
		zoneMargin float64
		clientLeaf netip.AddrPort
		face       clusterFaceFlags
		login      redisconn.Settings
	)
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the Redis protocol to unmodified Redis clients, in front of the cluster",
		Long: `Run the Redis-compatible gateway: it speaks RESP2 and RESP3 to
applications (redis-cli, go-redis, redis-py, ...) on --redis-addr and
reaches the cluster as the client library does: reads from the least loaded
cache candidate, writes through the storage shims. docs/gateway.md lists
the commands.`,
		Example: `  distcache gateway --map /run/distcache/partition-map.json --redis-addr 127.0.0.1:6379
  distcache gateway --map-configmap shop/shop-partition-map --redis-addr :6379 --data-plane-key-dir /etc/distcache/data-plane-key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			defaultGCPercent(gatewayGCPercent)
			log, w, err := o.load(cmd.Context())
			if err != nil {
				return err
			}
			if clientAddr == "" {
				// A cluster whose map comes from the API runs in pods: its
				// replies come to this host's address, not to loopback.
				clientAddr = "127.0.0.1:0"
				if o.maps.configMap != "" {
					clientAddr = "0.0.0.0:0"
				}
			}
			reg, wrapped := metrics.Registry("gateway", "")
			if err := o.key.register(wrapped); err != nil {
				return err
			}
			cfg.Registerer, cfg.Logger = wrapped, log
			if usersDir != "" {
				cfg.Users = &gateway.Users{Dir: usersDir}
			}
			if (tlsCert == "") != (tlsKey == "") {
				return errors.New("cannot serve TLS: --tls-cert and --tls-key go together")
			}
			if tlsCert != "" {
				if cfg.TLS, err = gateway.TLSFromFiles(tlsCert, tlsKey); err != nil {
					return err
				}
			}
			if cfg.Cluster, err = face.config(redisAddr, os.Getenv("POD_IP")); err != nil {
				return err
			}
			if _, err := login.Options(); err != nil {
				return fmt.Errorf("cannot use the shards' Redis login: %w", err)
			}
			cc := client.Config{Transport: o.transport(clientAddr, log), Maps: w, Registerer: wrapped, Logger: log,
				Zone: zone, Host: host, ZoneMargin: zoneMargin, ClientLeaf: clientLeaf, StorageLogin: login}
			cc.Transport.Polled = gateway.EventLoops(cfg) // the loops receive the replies
			cl, err := client.New(cc, w.Current())
			if err != nil {
				return err
			}
			g, err := gateway.NewGateway(redisAddr, cl, cfg)
			if err != nil {
				_ = cl.Close()
				return err
			}
			return serve(cmd, &o, w, g, reg, nil, log, "redis", redisAddr)
		},
	}
	o.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&redisAddr, "redis-addr", "127.0.0.1:6379", "TCP address of the Redis protocol")
	f.StringVar(&clientAddr, "client-addr", "", "UDP address of the gateway's DistCache client (default 127.0.0.1:0, or 0.0.0.0:0 with --map-configmap)")
	f.DurationVar(&cfg.OpTimeout, "op-timeout", gateway.DefaultOpTimeout, "bound of one command's work in the cluster")
	f.DurationVar(&cfg.CommandTimeout, "command-timeout", gateway.DefaultCommandTimeout, "how long a command may take to arrive once its first byte has")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", 0, "close connections idle for this long (0: never)")
	f.IntVar(&cfg.MaxConnections, "max-connections", gateway.DefaultMaxConnections, "open client connections at most")
	f.IntVar(&cfg.MaxInFlight, "max-in-flight", gateway.DefaultMaxInFlight, "commands running in the cluster at once, over every connection; the others wait in the gateway")
	f.IntVar(&cfg.Loops, "event-loops", 0, "event loops serving plaintext connections on Linux (0: half of GOMAXPROCS, at least one; -1: a goroutine per connection)")
	f.IntVar(&cfg.MaxCommandBytes, "max-command-bytes", gateway.DefaultMaxCommandBytes, "bytes a command may take; a larger one is discarded as it arrives and answered with an error")
	f.StringVar(&usersDir, "users-dir", "", "directory with a file per user, named as the user and holding its password (a mounted Secret): clients must AUTH; read at every AUTH, so rotation needs no restart")
	f.StringVar(&tlsCert, "tls-cert", "", "PEM certificate: serve Redis clients over TLS (with --tls-key); re-read when it changes")
	f.StringVar(&tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&zone, "zone", "", "the gateway's zone: reads prefer a key's cache node in it (default: the zone of the map's members on --host)")
	f.StringVar(&host, "host", os.Getenv("NODE_NAME"), "the machine (Kubernetes node) the gateway runs on, whose members' zone is its zone when --zone is unset (default $NODE_NAME)")
	f.Float64Var(&zoneMargin, "zone-margin", client.DefaultZoneMargin, "how much more loaded a cache node in the gateway's zone may be than one in another zone and still be chosen (negative: zones not told apart)")
	f.Var(addrPortValue{&clientLeaf}, "client-leaf", clientLeafHelp)
	face.addFlags(f)
	// The shards' Redis, reached directly where the map names it
	// (spec.dataPlane.directReads): transactions, scripts, direct reads.
	login.AddLoginFlags(f)
	_ = f.MarkHidden("listen") // the client's UDP address is --client-addr
	return cmd
}

// gatewayGCPercent is the gateway's GOGC unless its environment sets one.
// Its live heap is small (its connections' buffers and the rounds in
// flight) and it allocates per request, so collecting a quarter as often
// cost 9 MiB of resident memory under load (90 against 81) and saved a
// sixth of its CPU per pipelined GET (docs/benchmarks.md).
const gatewayGCPercent = 400

// defaultGCPercent sets the garbage collector's target to percent, unless
// GOGC is in the environment.
func defaultGCPercent(percent int) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(percent)
	}
}

// clusterFaceFlags are the flags of the gateway's cluster face.
type clusterFaceFlags struct {
	on         bool
	announceIP string
	peersDNS   string
}

func (c *clusterFaceFlags) addFlags(f *pflag.FlagSet) {
	f.BoolVar(&c.on, "cluster-face", false, "answer Redis Cluster clients as a node of a cluster of the gateways (CLUSTER SLOTS, SHARDS, NODES...); every gateway still serves every key")
	f.StringVar(&c.announceIP, "cluster-announce-ip", "", "the IP the cluster face names this gateway by (default: --redis-addr's IP, or $POD_IP when that listens on every address)")
	f.StringVar(&c.peersDNS, "cluster-peers-dns", "", fmt.Sprintf("a DNS name whose A records are the other gateways, each on this one's port (a headless Service), resolved again every %s; unset: this gateway alone", gateway.DefaultPeerRefresh))
}

// config is the gateway's cluster face (nil without --cluster-face) for
// a gateway listening on redisAddr, in a pod of IP podIP (when known).
func (c *clusterFaceFlags) config(redisAddr, podIP string) (*gateway.ClusterFace, error) {
	if !c.on {
		if c.announceIP != "" || c.peersDNS != "" {
			return nil, errors.New("cannot use --cluster-announce-ip or --cluster-peers-dns without --cluster-face")
		}
		return nil, nil
	}
	host, portText, err := net.SplitHostPort(redisAddr)
	if err != nil {
		return nil, fmt.Errorf("cannot answer as a Redis Cluster: --redis-addr %s: %w", redisAddr, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("cannot answer as a Redis Cluster: --redis-addr %s has no fixed port to announce", redisAddr)
	}
	ip := c.announceIP
	if ip == "" {
		ip = host
		if a, err := netip.ParseAddr(host); host == "" || (err == nil && a.IsUnspecified()) {
			ip = podIP
		}
	}
	if ip == "" {
		return nil, fmt.Errorf("cannot answer as a Redis Cluster: --redis-addr %s listens on every address: set --cluster-announce-ip or $POD_IP", redisAddr)
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil || addr.IsUnspecified() {
		return nil, fmt.Errorf("cannot answer as a Redis Cluster: %q is no IP clients can reach: set --cluster-announce-ip", ip)
	}
	face := &gateway.ClusterFace{Announce: netip.AddrPortFrom(addr.Unmap(), uint16(port))}
	if c.peersDNS != "" {
		face.Peers = gateway.DNSPeers{Name: c.peersDNS}
	}
	return face, nil
}
