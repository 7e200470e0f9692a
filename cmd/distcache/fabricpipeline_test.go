package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/internal/testing/switchtest"
	"github.com/distcache/distcache/placement/partmap"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

type oneSwitchMap struct{ addr string }

func (oneSwitchMap) ShardAddress(int, int) string       { return "127.0.0.1:7000" }
func (m oneSwitchMap) MemberAddress(string, int) string { return m.addr }

// fabricFiles writes a build's two files into dir.
func fabricFiles(t *testing.T, dir string, p4info, device []byte) (p4infoPath, devicePath string) {
	t.Helper()
	p4infoPath, devicePath = filepath.Join(dir, "p4info.txt"), filepath.Join(dir, "device_config.bin")
	for path, b := range map[string][]byte{p4infoPath: p4info, devicePath: device} {
		if err := os.WriteFile(path+".new", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	return p4infoPath, devicePath
}

// TestFabricPushesCompiledFiles: `distcache fabric --p4info --device-config`
// pushes the build's exact bytes and cookie to the switch; on SIGHUP it
// reads the files again and hands a new build of the same P4Info to the
// switch in its session, which keeps serving its cached key.
func TestFabricPushesCompiledFiles(t *testing.T) {
	target := switchtest.StartTarget(t, 1, 1)
	m, err := partmap.Build(partmap.Spec{Cluster: "lab", Racks: 1, ShardsPerRack: 1, Addresses: oneSwitchMap{target.Addr().String()},
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1, Switch: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mapFile := filepath.Join(dir, "map.json")
	if err := mapwatch.WriteFile(mapFile, m); err != nil {
		t.Fatal(err)
	}
	p4info := switchtest.CacheSwitchP4Info(t)
	build1, build2 := []byte("\x00bmv2 JSON, build 1\xff"), []byte("\x00bmv2 JSON, build 2\xff")
	p4infoPath, devicePath := fabricFiles(t, dir, p4info, build1)

	cmd := newFabricCommand()
	cmd.SetArgs([]string{"--map", mapFile, "--switch", m.Layers[0].Members[0].Name + "=" + target.P4Runtime,
		"--p4info", p4infoPath, "--device-config", devicePath, "--serving-lease", "1h", "--metrics-addr", "127.0.0.1:0", "--log-level", "error"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("distcache fabric: %v", err)
		}
	})
	holds := func(device []byte) {
		t.Helper()
		cookie := pipeline.Cookie(p4info, device)
		poll.Eventually(t, fmt.Sprintf("the switch holds %q, cookie %#016x", device, cookie), func() (bool, error) {
			got, err := switchtest.PipelineConfig(target.P4Runtime, 1)
			if err != nil {
				return false, err
			}
			return string(got.GetP4DeviceConfig()) == string(device) && got.GetCookie().GetCookie() == cookie,
				fmt.Errorf("it holds %q, cookie %#016x", got.GetP4DeviceConfig(), got.GetCookie().GetCookie())
		})
	}
	holds(build1)
	poll.Eventually(t, "the shard routed", func() (bool, error) { return tableEntries(t, target, "storage_route") == 1, nil })
	switchtest.CacheValue(t, target.Switch(), "user:42", 900, []byte("cached before"))
	readPort := netip.AddrPortFrom(target.Addr().Addr(), partmap.SwitchReadPort(target.Addr().Port(), 0))
	hit := func(when string) {
		t.Helper()
		if r := switchtest.Get(t, readPort, "user:42"); r.Flags&wire.FlagHit == 0 || string(r.Value) != "cached before" {
			t.Fatalf("%s: GET answered flags %#x value %q, want a hit", when, r.Flags, r.Value)
		}
	}
	hit("with build 1")

	fabricFiles(t, dir, p4info, build2)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	holds(build2)
	hit("after the upgrade in session")
}

func tableEntries(t *testing.T, target *switchtest.Target, table string) int {
	t.Helper()
	info, _, _ := target.Switch().Pipeline()
	id, _ := pipelines.ObjectID(info, table)
	n, err := target.Switch().Read([]*p4v1.Entity{{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: id}}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(n)
}

// TestFabricRefusesBuilds: a build that does not load stops `distcache
// fabric` before it dials a switch.
func TestFabricRefusesBuilds(t *testing.T) {
	dir := t.TempDir()
	p4info := switchtest.CacheSwitchP4Info(t)
	renamed := []byte(strings.Replace(string(p4info), `name: "cache_lookup"`, `name: "lookup"`, 1))
	bad, dev := fabricFiles(t, dir, renamed, []byte("bmv2"))
	mapFile := filepath.Join(dir, "map.json")
	m, err := partmap.Build(partmap.Spec{Cluster: "lab", Racks: 1, ShardsPerRack: 1, Addresses: oneSwitchMap{"127.0.0.1:27400"},
		Layers: []partmap.LayerSpec{{Name: "spine", Nodes: 1, Switch: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mapwatch.WriteFile(mapFile, m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"another P4Info", []string{"--p4info", bad, "--device-config", dev}, "table cache_lookup (id 0x2000004) missing"},
		{"P4Info alone", []string{"--p4info", bad}, "--p4info and --device-config go together"},
		{"files and an image", []string{"--p4info", bad, "--device-config", dev, "--pipeline-image", "registry.example/p:1"}, "choose one"},
		{"unknown pipeline", []string{"--pipeline", "distcache-p4-14"}, `pipeline "distcache-p4-14" is not one of`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newFabricCommand()
			// A port where nothing listens: nothing must dial it.
			cmd.SetArgs(append([]string{"--map", mapFile, "--switch", "lab-spine-0=127.0.0.1:1", "--metrics-addr", "127.0.0.1:0"}, tc.args...))
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestUpPushesSwitchPipelineDir: `distcache up --switch-pipeline-dir`
// stands for the ConfigMap of the fabric's pipelineSource: every software
// switch of the cluster holds the build's exact bytes and cookie.
func TestUpPushesSwitchPipelineDir(t *testing.T) {
	bin := buildDistcache(t)
	spec := strings.Replace(switchCluster(t), "  pipeline: distcache-v1model\n",
		"  pipeline: distcache-v1model\n  pipelineSource: {configMapRef: {name: bmv2-build}}\n", 1)
	file, runDir := clusterFile(t, bin, spec)
	if out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir, "--gateway=false"); err == nil ||
		!strings.Contains(out, "standalone mode has no ConfigMaps") {
		t.Fatalf("up without the ConfigMap's files: %v\n%s", err, out)
	}
	p4info := switchtest.CacheSwitchP4Info(t)
	device := []byte("\x00bmv2 JSON from a workstation\xff")
	dir := t.TempDir()
	fabricFiles(t, dir, p4info, device)
	if out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir, "--gateway=false", "--switch-pipeline-dir", dir); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	cookie := pipeline.Cookie(p4info, device)
	addrs := regexp.MustCompile(`p4runtimeAddress: "([^"]+)"`).FindAllStringSubmatch(spec, -1)
	if len(addrs) != 2 {
		t.Fatalf("p4runtime addresses %v", addrs)
	}
	for i, a := range addrs {
		poll.Eventually(t, fmt.Sprintf("switch %s holds the build", a[1]), func() (bool, error) {
			got, err := switchtest.PipelineConfig(a[1], uint64(i+1))
			if err != nil {
				return false, err
			}
			return string(got.GetP4DeviceConfig()) == string(device) && got.GetCookie().GetCookie() == cookie,
				fmt.Errorf("it holds %q, cookie %#016x", got.GetP4DeviceConfig(), got.GetCookie().GetCookie())
		})
	}
}
