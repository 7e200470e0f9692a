package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/distcache/distcache/dataplane/kubemap"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/internal/testing/kubetest"
	"github.com/distcache/distcache/internal/testing/redistest"
	"github.com/distcache/distcache/placement/partmap"
)

// mapDeliveryVersions is how many map versions TestMapDelivery publishes
// to each set of processes; `make bench-map-delivery` raises it to measure
// the delivery latency (docs/benchmarks.md).
var mapDeliveryVersions = flag.Int("map-delivery-versions", 3, "map versions TestMapDelivery publishes per source")

// TestMapDelivery runs real `distcache shim` and two `distcache node`
// processes in front of a real redis-server, reading their map through the
// Kubernetes API as a ServiceAccount allowed only the data-plane Role
// (envtest's API server), and publishes new map versions: every process
// must apply each one. For comparison the same processes also run on a map
// file, as standalone mode does. It logs publication → applied-at-every-
// process latencies; it asserts no timing.
func TestMapDelivery(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and five processes")
	}
	env, err := kubetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	bin := buildDistcache(t)
	srv := redistest.Start(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "map.json")
	if out, err := runCommand(t, "map", "init", "--out", path, "--layer", "spine=2", "--base-port", strconv.Itoa(freeUDPBlock(t, 2))); err != nil {
		t.Fatalf("map init: %v\n%s", err, out)
	}
	m := readMap(t, path)

	ctx := context.Background()
	const ns, name = "delivery", "distcache-partition-map"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{kubemap.Key: string(mustEncodeMap(t, m))}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	sa, err := env.ServiceAccount(ctx, ns, "distcache-data-plane", kubemap.Rules(name))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := kubetest.WriteKubeconfig(sa, kubeconfig); err != nil {
		t.Fatal(err)
	}

	sources := []struct {
		name    string
		flags   []string
		publish func(*partmap.Map) error
	}{
		{"configmap", []string{"--map-configmap", ns + "/" + name, "--kubeconfig", kubeconfig}, func(next *partmap.Map) error {
			cm.Data = map[string]string{kubemap.Key: string(mustEncodeMap(t, next))}
			return env.Client.Update(ctx, cm)
		}},
		{"file", []string{"--map", path}, func(next *partmap.Map) error { return mapwatch.WriteFile(path, next) }},
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			procs := []*mapProcess{
				startMapProcess(t, bin, append([]string{"shim", "--shard", "distcache-rack-0-0", "--redis", srv.Addr()}, src.flags...)),
				startMapProcess(t, bin, append([]string{"node", "--member", "distcache-spine-0"}, src.flags...)),
				startMapProcess(t, bin, append([]string{"node", "--member", "distcache-spine-1"}, src.flags...)),
			}
			for _, p := range procs {
				p.await(t, "serving", 0)
			}
			var lat []time.Duration
			for i := range *mapDeliveryVersions {
				// Successive maps as the failover policy writes them:
				// spine-1 fenced, then active again.
				state := partmap.Fenced
				if i%2 == 1 {
					state = partmap.Active
				}
				next, _, err := m.WithState("distcache-spine-1", state)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if err := src.publish(next); err != nil {
					t.Fatal(err)
				}
				var last time.Time
				for _, p := range procs {
					last = latest(last, p.await(t, "installed partition map", next.Version))
				}
				lat = append(lat, last.Sub(start))
				m = next
			}
			slices.Sort(lat)
			t.Logf("%s: %d versions, publication → applied by all 3 processes: p50 %v p99 %v max %v",
				src.name, len(lat), quantile(lat, 0.50), quantile(lat, 0.99), lat[len(lat)-1])
		})
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// quantile of sorted d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(d))+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)]
}

func mustEncodeMap(t *testing.T, m *partmap.Map) []byte {
	t.Helper()
	b, err := partmap.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mapProcess is a running distcache role whose log lines are watched for
// messages, each noted with the time the test read it.
type mapProcess struct {
	args  []string
	lines chan logLine
	mu    sync.Mutex // guards tail
	tail  []string   // the last lines, for failures
}

type logLine struct {
	msg     string
	version int64
	at      time.Time
}

var (
	msgField     = regexp.MustCompile(`msg="([^"]*)"|msg=(\S+)`)
	versionField = regexp.MustCompile(`\bversion=(\d+)`)
)

func startMapProcess(t *testing.T, bin string, args []string) *mapProcess {
	t.Helper()
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), bin, append(args, "--log-level", "info", "--metrics-addr", "127.0.0.1:0")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &mapProcess{args: args, lines: make(chan logLine, 1024)}
	done := make(chan struct{})
	go func() { defer close(done); p.read(stderr) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		_ = cmd.Wait()
	})
	return p
}

func (p *mapProcess) read(r io.Reader) {
	defer close(p.lines)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		at, line := time.Now(), sc.Text()
		p.mu.Lock()
		p.tail = append(p.tail[max(0, len(p.tail)-20):], line)
		p.mu.Unlock()
		mm := msgField.FindStringSubmatch(line)
		if mm == nil {
			continue
		}
		l := logLine{msg: mm[1] + mm[2], at: at}
		if v := versionField.FindStringSubmatch(line); v != nil {
			l.version, _ = strconv.ParseInt(v[1], 10, 64)
		}
		p.lines <- l
	}
}

// await waits for a log line with msg (and version, when not 0) and
// returns when the test read it.
func (p *mapProcess) await(t *testing.T, msg string, version int64) time.Time {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s exited before %q v%d:\n%s", p.args[0], msg, version, p.lastLines())
			}
			if l.msg == msg && (version == 0 || l.version == version) {
				return l.at
			}
		case <-timeout:
			t.Fatalf("%s: no %q v%d within 30s:\n%s", p.args[0], msg, version, p.lastLines())
		}
	}
}

func (p *mapProcess) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}
