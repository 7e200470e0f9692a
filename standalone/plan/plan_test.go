package plan_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/distcache/distcache/operator/api/v1alpha1"
	"github.com/distcache/distcache/standalone/plan"
	"github.com/distcache/distcache/topology"
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
func newCluster(t *testing.T, opts ...specOption) *topology.Cluster {
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
	layers, err := topology.ResolveLayers(&spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := topology.New("t", spec, layers)
	if err != nil {
		t.Fatal(err)
	}
	return c
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
		cluster                *topology.Cluster
		opts                   plan.Options
		redis, shims, nodes    int
		shardRate, nodeRate    float64
		shimRedis              string // the --redis flag of shard t-rack-1-1's shim (default: its Redis process)
		shimCapacityFlag       string // "" when no emulation
		nodeCapacityFlag       string
		nodeEntriesFlagOfSpine string
	}{{
		name: "managed storage, no emulation", cluster: newCluster(t),
		redis: 4, shims: 4, nodes: 4, nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name: "emulated capacity: a node gets a rack's worth", cluster: newCluster(t), opts: plan.Options{ShardRate: 100},
		redis: 4, shims: 4, nodes: 4, shardRate: 100, nodeRate: 200,
		shimCapacityFlag: "--emulated-capacity=100", nodeCapacityFlag: "--emulated-capacity=200", nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name: "explicit node capacity", cluster: newCluster(t), opts: plan.Options{ShardRate: 100, NodeRate: 1000},
		redis: 4, shims: 4, nodes: 4, shardRate: 100, nodeRate: 1000,
		shimCapacityFlag: "--emulated-capacity=100", nodeCapacityFlag: "--emulated-capacity=1000", nodeEntriesFlagOfSpine: "--capacity=50",
	}, {
		name:    "external storage: no local Redis",
		cluster: newCluster(t, withExternal("a:1", "b:2", "c:3", "d:4")),
		redis:   0, shims: 4, nodes: 4, shimRedis: "--redis=d:4", nodeEntriesFlagOfSpine: "--capacity=50",
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
			addrs := map[string]bool{}
			for _, pr := range p.Processes {
				count[pr.Kind]++
				for _, a := range []string{pr.Addr, pr.MetricsAddr} {
					if a != "" && addrs[string(pr.Kind)+a] {
						t.Errorf("address %s used twice", a)
					}
					addrs[string(pr.Kind)+a] = true
				}
			}
			if count[plan.Redis] != tc.redis || count[plan.Shim] != tc.shims || count[plan.Node] != tc.nodes || count[plan.ControlLoop] != 1 {
				t.Errorf("processes = %v, want %d redis, %d shims, %d nodes, 1 control loop", count, tc.redis, tc.shims, tc.nodes)
			}
			checkControlLoop(t, p, o.RunDir)
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

// checkControlLoop checks that the control loop is started last, reads
// its configuration from the run directory and serves its metrics on the
// planned address.
func checkControlLoop(t *testing.T, p *plan.Plan, runDir string) {
	t.Helper()
	last := p.Processes[len(p.Processes)-1]
	if last.Kind != plan.ControlLoop || last.Name != "t-controlloop" || last.MetricsAddr == "" {
		t.Fatalf("last process %+v, want the control loop t-controlloop with a metrics address", last)
	}
	if filepath.Dir(p.ControlLoopConfig) != runDir || filepath.Dir(p.EventsFile) != runDir {
		t.Errorf("control loop files %s, %s; want them in %s", p.ControlLoopConfig, p.EventsFile, runDir)
	}
	want := []string{"controlloop", "--config=" + p.ControlLoopConfig, "--metrics-addr=" + last.MetricsAddr, "--log-level=info"}
	if !slices.Equal(last.Args, want) {
		t.Errorf("control loop args %v, want %v", last.Args, want)
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
func checkMap(t *testing.T, p *plan.Plan, c *topology.Cluster) {
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
// password or TLS is refused rather than run with shims that cannot log in.
func TestNewRefusesRedisAuthAndTLS(t *testing.T) {
	for name, edit := range map[string]specOption{
		"auth": func(s *v1alpha1.CacheClusterSpec) { s.Storage.Auth = &v1alpha1.RedisAuthSpec{SecretName: "login"} },
		"tls":  func(s *v1alpha1.CacheClusterSpec) { s.Storage.TLS = &v1alpha1.RedisTLSSpec{} },
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

func TestFreePortsAreDistinct(t *testing.T) {
	tcp, udp, err := plan.FreePorts("127.0.0.1", 20, 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, ports := range [][]int{tcp, udp} {
		seen := map[int]bool{}
		for _, p := range ports {
			if p <= 0 || seen[p] {
				t.Fatalf("ports %v: %d repeated or invalid", ports, p)
			}
			seen[p] = true
		}
	}
	if len(tcp) != 20 || len(udp) != 20 {
		t.Fatalf("got %d TCP and %d UDP ports, want 20 each", len(tcp), len(udp))
	}
}
