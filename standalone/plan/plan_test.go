package plan_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/api/v1alpha1"
	"github.com/distcache/distcache/internal/testing/topotest"
	"github.com/distcache/distcache/layout"
	"github.com/distcache/distcache/standalone/plan"
)

// specOption edits a test spec.
type specOption func(*v1alpha1.CacheClusterSpec)

func withExternal(addrs ...string) specOption {
	return func(s *v1alpha1.CacheClusterSpec) {
		s.Storage.Mode, s.Storage.External = v1alpha1.StorageExternal, addrs
	}
}

func withAppendOnly(a v1alpha1.AppendOnly) specOption {
	return func(s *v1alpha1.CacheClusterSpec) { s.Storage.AppendOnly = a }
}

func withSwitchLayer() specOption {
	return func(s *v1alpha1.CacheClusterSpec) {
		s.Layers[0].Backend = v1alpha1.BackendSwitch
		s.Layers[0].Switch = &v1alpha1.SwitchLayerSpec{FabricRef: "f", Role: v1alpha1.RoleSpine}
	}
}

// newCluster lays out 2 racks × 2 shards with a 2-node spine and a leaf
// layer bound to the racks.
func newCluster(t *testing.T, opts ...specOption) *layout.Cluster {
	t.Helper()
	spec := v1alpha1.CacheClusterSpec{
		Storage: v1alpha1.StorageSpec{Racks: 2, ShardsPerRack: 2},
		Layers: []v1alpha1.NamedLayer{
			{Name: "spine", CacheLayerSpec: v1alpha1.CacheLayerSpec{Nodes: ptr.To(int32(2)), Capacity: v1alpha1.NodeCapacity{Entries: 50}}},
			{Name: "leaf", CacheLayerSpec: v1alpha1.CacheLayerSpec{BoundToRacks: true}},
		},
	}
	for _, o := range opts {
		o(&spec)
	}
	return topotest.New(t, "t", spec)
}

// sequentialPorts hands out ports from 20000 (TCP) and 30000 (UDP) up.
func sequentialPorts(_ string, tcp, udp int) ([]int, []int, error) {
	var t, u []int
	for i := range tcp {
		t = append(t, 20000+i)
	}
	for i := range udp {
		u = append(u, 30000+i)
	}
	return t, u, nil
}

func TestNew(t *testing.T) {
	tests := []struct {
		name                   string
		cluster                *layout.Cluster
		opts                   plan.Options
		redis, shims, nodes    int
		gateways, prometheuses int
		shardRate, nodeRate    float64
		shimRedis              string // the --redis flag of shard t-rack-1-1's shim (default: its Redis process)
		shimCapacityFlag       string // "" when no emulation
		nodeCapacityFlag       string
		nodeEntriesFlagOfSpine string
	}{{
		name: "managed storage, no emulation", cluster: newCluster(t),
		redis: 4, shims: 4, nodes: 4, gateways: 1, nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name: "emulated capacity: a node gets a rack's worth", cluster: newCluster(t), opts: plan.Options{ShardRate: 100},
		redis: 4, shims: 4, nodes: 4, gateways: 1, shardRate: 100, nodeRate: 200,
		shimCapacityFlag: "--emulated-capacity=100", nodeCapacityFlag: "--emulated-capacity=200", nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name: "explicit node capacity", cluster: newCluster(t), opts: plan.Options{ShardRate: 100, NodeRate: 1000},
		redis: 4, shims: 4, nodes: 4, gateways: 1, shardRate: 100, nodeRate: 1000,
		shimCapacityFlag: "--emulated-capacity=100", nodeCapacityFlag: "--emulated-capacity=1000", nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name:    "external storage: no local Redis",
		cluster: newCluster(t, withExternal("a:1", "b:2", "c:3", "d:4")),
		redis:   0, shims: 4, nodes: 4, gateways: 1, shimRedis: "--redis=d:4", nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name: "map poll, log level and a Prometheus", cluster: newCluster(t),
		opts:  plan.Options{MapPoll: 100 * time.Millisecond, LogLevel: "debug", Prometheus: "/bin/prometheus"},
		redis: 4, shims: 4, nodes: 4, gateways: 1, prometheuses: 1, nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name: "no gateway", cluster: newCluster(t), opts: plan.Options{NoGateway: true, Prometheus: "/bin/prometheus"},
		redis: 4, shims: 4, nodes: 4, gateways: 0, prometheuses: 1, nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name: "spec.gateway.replicas 0", cluster: newCluster(t, func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Replicas = ptr.To(int32(0)) }),
		redis: 4, shims: 4, nodes: 4, gateways: 0, nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name: "spec.gateway.replicas 3: one gateway on one host", cluster: newCluster(t, func(s *v1alpha1.CacheClusterSpec) { s.Gateway.Replicas = ptr.To(int32(3)) }),
		redis: 4, shims: 4, nodes: 4, gateways: 1, nodeEntriesFlagOfSpine: "--capacity=50",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.RunDir, o.Binary, o.RedisServer, o.Ports = t.TempDir(), "/bin/distcache", "/bin/redis-server", sequentialPorts
			p, err := plan.New(tc.cluster, o)
			if err != nil {
				t.Fatal(err)
			}
			count := map[plan.Kind]int{}
			for _, pr := range p.Processes {
				count[pr.Kind]++
			}
			if count[plan.Redis] != tc.redis || count[plan.Shim] != tc.shims || count[plan.Node] != tc.nodes || count[plan.ControlLoop] != 1 ||
				count[plan.Gateway] != tc.gateways || count[plan.Prometheus] != tc.prometheuses || len(p.Processes) != tc.redis+tc.shims+tc.nodes+1+tc.gateways+tc.prometheuses {
				t.Errorf("processes = %v, want %d redis, %d shims, %d nodes, 1 control loop, %d gateways, %d prometheuses",
					count, tc.redis, tc.shims, tc.nodes, tc.gateways, tc.prometheuses)
			}
			checkAddresses(t, p)
			checkStartOrder(t, p)
			checkControlLoop(t, p, o.RunDir)
			checkGateway(t, p, o, tc.gateways == 1)
			if p.ShardRate != tc.shardRate || p.NodeRate != tc.nodeRate {
				t.Errorf("rates = %v/%v, want %v/%v", p.ShardRate, p.NodeRate, tc.shardRate, tc.nodeRate)
			}
			wantRedis := tc.shimRedis
			if wantRedis == "" {
				r, ok := p.Process("t-rack-1-1-redis")
				if !ok {
					t.Fatal("no Redis process for shard t-rack-1-1")
				}
				wantRedis = "--redis=" + r.Addr
			}
			shim, ok := p.Process("t-rack-1-1")
			if !ok || !slices.Contains(shim.Args, wantRedis) {
				t.Errorf("shim t-rack-1-1 args %v lack %s", shim.Args, wantRedis)
			}
			spine, ok := p.Process("t-spine-0")
			if !ok || !slices.Contains(spine.Args, tc.nodeEntriesFlagOfSpine) {
				t.Errorf("node t-spine-0 args %v lack %s", spine.Args, tc.nodeEntriesFlagOfSpine)
			}
			checkFlag(t, shim.Args, "--emulated-capacity", tc.shimCapacityFlag)
			checkFlag(t, spine.Args, "--emulated-capacity", tc.nodeCapacityFlag)
			checkMap(t, p, tc.cluster)
		})
	}
}

// checkControlLoop checks that the control loop, started after the cache
// nodes, reads its configuration from the run directory and serves its
// metrics on the planned address.
func checkControlLoop(t *testing.T, p *plan.Plan, runDir string) {
	t.Helper()
	loop, ok := p.Process("t-controlloop")
	if !ok || loop.Kind != plan.ControlLoop || loop.MetricsAddr == "" {
		t.Fatalf("control loop %+v (found: %v), want t-controlloop with a metrics address", loop, ok)
	}
	if filepath.Dir(p.ControlLoopConfig) != runDir || filepath.Dir(p.EventsFile) != runDir {
		t.Errorf("control loop files %s, %s; want them in %s", p.ControlLoopConfig, p.EventsFile, runDir)
	}
	want := []string{"controlloop", "--config=" + p.ControlLoopConfig, "--metrics-addr=" + loop.MetricsAddr, "--log-level=" + logLevel(p)}
	if !slices.Equal(loop.Args, want) {
		t.Errorf("control loop args %v, want %v", loop.Args, want)
	}
}

// logLevel is the --log-level the control loop of p was given.
func logLevel(p *plan.Plan) string {
	for _, pr := range p.Processes {
		for _, a := range pr.Args {
			if v, ok := strings.CutPrefix(a, "--log-level="); ok && pr.Kind == plan.ControlLoop {
				return v
			}
		}
	}
	return ""
}

// checkGateway checks the gateway (none unless want): the
// distcache gateway with the Redis protocol on an address of its own and
// the flags every role gets from the plan.
func checkGateway(t *testing.T, p *plan.Plan, o plan.Options, planned bool) {
	t.Helper()
	gw, ok := p.Process("t-gateway")
	if !planned {
		if ok {
			t.Errorf("gateway %+v planned, want none", gw)
		}
		return
	}
	if !ok || gw.Kind != plan.Gateway || gw.Path != o.Binary || gw.Addr == "" || gw.MetricsAddr == "" || gw.Addr == gw.MetricsAddr {
		t.Fatalf("gateway %+v (found: %v), want kind gateway running %s with a Redis and a metrics address", gw, ok, o.Binary)
	}
	level := o.LogLevel
	if level == "" {
		level = "info"
	}
	want := []string{"gateway", "--redis-addr=" + gw.Addr, "--map=" + p.MapFile, "--data-plane-key-dir=" + p.DataPlaneKeyDir, "--replay-protection=require",
		"--metrics-addr=" + gw.MetricsAddr, "--log-level=" + level}
	if o.MapPoll > 0 {
		want = append(want, "--map-poll="+o.MapPoll.String())
	}
	if !slices.Equal(gw.Args, want) {
		t.Errorf("gateway args %v, want %v", gw.Args, want)
	}
	if want := filepath.Join(o.RunDir, "logs", "t-gateway.log"); gw.LogFile != want {
		t.Errorf("gateway log %s, want %s", gw.LogFile, want)
	}
}

// checkStartOrder checks that the processes come in the documented start
// order: the storage (each shard's Redis and shim, which the cluster
// starts kind by kind), cache nodes, the control loop, the gateway,
// Prometheus.
func checkStartOrder(t *testing.T, p *plan.Plan) {
	t.Helper()
	rank := map[plan.Kind]int{plan.Redis: 0, plan.Shim: 0, plan.Node: 1, plan.ControlLoop: 2, plan.Gateway: 3, plan.Prometheus: 4}
	last := 0
	for i, pr := range p.Processes {
		r, ok := rank[pr.Kind]
		if !ok {
			t.Fatalf("%s has kind %q, which the cluster does not start", pr.Name, pr.Kind)
		}
		if r < last {
			t.Fatalf("%s (%s) after %s: processes not in start order", pr.Name, pr.Kind, p.Processes[i-1].Name)
		}
		last = r
	}
}

// checkAddresses checks that no TCP address (the supervisor's metrics,
// every process's metrics, a Redis's, the gateway's and Prometheus') nor
// UDP address (the data plane of a shim or node) is planned twice.
func checkAddresses(t *testing.T, p *plan.Plan) {
	t.Helper()
	tcp, udp := map[string]string{p.MetricsAddr: "supervisor"}, map[string]string{}
	use := func(seen map[string]string, addr, by string) {
		if addr == "" {
			return
		}
		if other, ok := seen[addr]; ok {
			t.Errorf("address %s used by %s and %s", addr, other, by)
		}
		seen[addr] = by
	}
	for _, pr := range p.Processes {
		use(tcp, pr.MetricsAddr, pr.Name)
		if pr.Kind == plan.Shim || pr.Kind == plan.Node {
			use(udp, pr.Addr, pr.Name)
		} else {
			use(tcp, pr.Addr, pr.Name)
		}
	}
}

// checkFlag checks that args have want, or no flag with prefix when want
// is empty.
func checkFlag(t *testing.T, args []string, prefix, want string) {
	t.Helper()
	if want != "" {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
		return
	}
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			t.Errorf("args have %s, want none", a)
		}
	}
}

// checkMap checks that the plan's map is the topology's, with each member
// and shard at its process's address.
func checkMap(t *testing.T, p *plan.Plan, c *layout.Cluster) {
	t.Helper()
	want, err := c.Map(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Map.Layers) != len(want.Layers) {
		t.Fatalf("map has %d layers, want %d", len(p.Map.Layers), len(want.Layers))
	}
	for l, layer := range p.Map.Layers {
		if layer.Seed != want.Layers[l].Seed || len(layer.Members) != len(want.Layers[l].Members) {
			t.Errorf("layer %s differs from the topology's", layer.Name)
		}
		for i, mb := range layer.Members {
			pr, ok := p.Process(mb.Name)
			if !ok || pr.Addr != mb.Address || mb.Name != want.Layers[l].Members[i].Name {
				t.Errorf("member %s at %q, process %+v", mb.Name, mb.Address, pr)
			}
		}
	}
	for _, rack := range p.Map.Storage.Racks {
		for _, sh := range rack.Shards {
			if pr, ok := p.Process(sh.Name); !ok || pr.Addr != sh.Address {
				t.Errorf("shard %s at %q, process %+v", sh.Name, sh.Address, pr)
			}
		}
	}
}

// TestNewAppendOnly checks that every local Redis gets the spec's
// append-only setting, with its file in its own directory under the run
// directory, and that the plan summarises it.
func TestNewAppendOnly(t *testing.T) {
	tests := []struct {
		name        string
		opts        []specOption
		wantArgs    []string // in every Redis's arguments
		persistence string
	}{
		{"unset: everysec", nil, []string{"--appendonly", "yes", "--appendfsync", "everysec"}, "aof-everysec"},
		{"always", []specOption{withAppendOnly(v1alpha1.AppendOnlyAlways)}, []string{"--appendonly", "yes", "--appendfsync", "always"}, "aof-always"},
		{"disabled", []specOption{withAppendOnly(v1alpha1.AppendOnlyDisabled)}, []string{"--appendonly", "no"}, "none"},
		{"external storage", []specOption{withExternal("a:1", "b:2", "c:3", "d:4")}, nil, "unmanaged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runDir := t.TempDir()
			p, err := plan.New(newCluster(t, tc.opts...), plan.Options{RunDir: runDir, Ports: sequentialPorts})
			if err != nil {
				t.Fatal(err)
			}
			if p.Persistence != tc.persistence {
				t.Errorf("Persistence = %q, want %q", p.Persistence, tc.persistence)
			}
			for _, pr := range p.Processes {
				if pr.Kind != plan.Redis {
					continue
				}
				if want := filepath.Join(runDir, "redis", pr.Shard); pr.Dir != want || !containsRun(pr.Args, "--dir", want) {
					t.Errorf("%s: dir %q, args %q, want --dir %s", pr.Name, pr.Dir, pr.Args, want)
				}
				if !containsRun(pr.Args, tc.wantArgs...) {
					t.Errorf("%s: args %q lack %q", pr.Name, pr.Args, tc.wantArgs)
				}
			}
		})
	}
}

// containsRun says whether args hold run as consecutive elements.
func containsRun(args []string, run ...string) bool {
	for i := range len(args) - len(run) + 1 {
		if slices.Equal(args[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

func TestNewRefusesSwitchLayers(t *testing.T) {
	_, err := plan.New(newCluster(t, withSwitchLayer()), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts})
	if !errors.Is(err, plan.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
}

// TestNewRefusesRedisAuthAndTLS checks that a cluster file with a Redis
// password or TLS is refused rather than run with shims that cannot log in,
// and one with gateway users or TLS rather than run with an open gateway.
func TestNewRefusesRedisAuthAndTLS(t *testing.T) {
	for name, edit := range map[string]specOption{
		"auth":          func(s *v1alpha1.CacheClusterSpec) { s.Storage.Auth = &v1alpha1.RedisAuthSpec{SecretName: "login"} },
		"tls":           func(s *v1alpha1.CacheClusterSpec) { s.Storage.TLS = &v1alpha1.RedisTLSSpec{} },
		"gateway users": func(s *v1alpha1.CacheClusterSpec) { s.Gateway.UsersSecretName = "users" },
		"gateway tls":   func(s *v1alpha1.CacheClusterSpec) { s.Gateway.TLSSecretName = "cert" },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := plan.New(newCluster(t, withExternal("192.0.2.1:6379", "192.0.2.2:6379", "192.0.2.3:6379", "192.0.2.4:6379"), edit),
				plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts})
			if !errors.Is(err, plan.ErrUnsupported) {
				t.Fatalf("err = %v, want ErrUnsupported", err)
			}
		})
	}
}

// TestNewRefusesTooFewPorts checks that a port source that hands out fewer
// ports than asked for is an error, not a plan with a port missing.
func TestNewRefusesTooFewPorts(t *testing.T) {
	short := func(host string, tcp, udp int) ([]int, []int, error) {
		tcpPorts, udpPorts, err := sequentialPorts(host, tcp, udp)
		return tcpPorts[:len(tcpPorts)-1], udpPorts, err
	}
	if _, err := plan.New(newCluster(t), plan.Options{RunDir: t.TempDir(), Ports: short}); err == nil || !strings.Contains(err.Error(), "cannot lay out t") {
		t.Fatalf("err = %v, want a refusal", err)
	}
}

// TestNewBundles checks that spec.dataPlane.bundles (which distcache up
// --bundle turns on, dataPlaneSpec) gives every shim, cache node and the
// gateway --bundle, once, and nothing else.
func TestNewBundles(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("bundles %v", on), func(t *testing.T) {
			withBundles := func(s *v1alpha1.CacheClusterSpec) { s.DataPlane = &v1alpha1.DataPlaneSpec{Bundles: on} }
			p, err := plan.New(newCluster(t, withBundles), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts})
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if on {
				want = 1
			}
			for _, pr := range p.Processes {
				n := 0
				for _, a := range pr.Args {
					if a == "--bundle" {
						n++
					}
				}
				dataPlane := pr.Kind == plan.Shim || pr.Kind == plan.Node || pr.Kind == plan.Gateway
				if (dataPlane && n != want) || (!dataPlane && n != 0) {
					t.Errorf("%s (%s): --bundle %d times in %q", pr.Name, pr.Kind, n, pr.Args)
				}
			}
		})
	}
}

// TestNewDirectReads checks that spec.dataPlane.directReads puts the
// address of every shard's redis-server in the map (none without it), and
// that emulated capacity, which the shims count, refuses it.
func TestNewDirectReads(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct reads %v", on), func(t *testing.T) {
			withDirect := func(s *v1alpha1.CacheClusterSpec) { s.DataPlane = &v1alpha1.DataPlaneSpec{DirectReads: on} }
			p, err := plan.New(newCluster(t, withDirect), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Map.Storage.Racks {
				for _, sh := range r.Shards {
					redis, ok := p.Process(sh.Name + "-redis")
					if !ok {
						t.Fatalf("no redis-server for %s", sh.Name)
					}
					if want := map[bool]string{true: redis.Addr}[on]; sh.Redis != want {
						t.Errorf("shard %s: redis %q in the map, want %q", sh.Name, sh.Redis, want)
					}
				}
			}
			_, err = plan.New(newCluster(t, withDirect), plan.Options{RunDir: t.TempDir(), Ports: sequentialPorts, ShardRate: 100})
			if refused := err != nil && strings.Contains(err.Error(), "directReads"); refused != on {
				t.Errorf("with emulated capacity: %v, want refused %v", err, on)
			}
		})
	}
}

// TestCheckRefusesSwitchesItCannotRun: switch-backed layers without their
// fabric's switches, of the onos driver, or without P4Runtime addresses.
func TestCheckRefusesSwitchesItCannotRun(t *testing.T) {
	layer := func(edit func(*layout.Layer)) []layout.Layer {
		l := layout.Layer{Name: "spine", Spec: v1alpha1.CacheLayerSpec{Backend: v1alpha1.BackendSwitch,
			Switch: &v1alpha1.SwitchLayerSpec{FabricRef: "f", Role: v1alpha1.RoleSpine}},
			Driver:   v1alpha1.DriverStratum,
			Switches: []v1alpha1.Switch{{Name: "a", DeviceID: 1, Role: v1alpha1.RoleSpine, P4RuntimeAddress: "127.0.0.1:9559", DataAddress: "127.0.0.1:7400"}}}
		edit(&l)
		return []layout.Layer{l}
	}
	tests := []struct {
		name   string
		layers []layout.Layer
		want   string
	}{
		{"unresolved", layer(func(l *layout.Layer) { l.Switches = nil }), "need a SwitchFabric"},
		{"onos", layer(func(l *layout.Layer) { l.Driver = v1alpha1.DriverONOS }), "driver is onos"},
		{"no P4Runtime address", layer(func(l *layout.Layer) { l.Switches[0].P4RuntimeAddress = "" }), "set its p4runtimeAddress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &layout.Cluster{Name: "c", Layers: tt.layers}
			err := plan.Check(c, &plan.Options{})
			if !errors.Is(err, plan.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want ErrUnsupported with %q", err, tt.want)
			}
		})
	}
}
