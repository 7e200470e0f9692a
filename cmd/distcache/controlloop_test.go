package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/distcache/distcache/client"
	"github.com/distcache/distcache/dataplane/mapwatch"
	"github.com/distcache/distcache/failover"
	"github.com/distcache/distcache/internal/freeport"
	"github.com/distcache/distcache/internal/testing/httpget"
	"github.com/distcache/distcache/internal/testing/poll"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/controlloop"
)

// healthServer stands in for a cache node's /healthz.
type healthServer struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newHealthServer(t *testing.T) *healthServer {
	t.Helper()
	h := &healthServer{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if h.down.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// readMap reads a map file.
func readMap(t *testing.T, path string) *partmap.Map {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := partmap.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func memberState(t *testing.T, m *partmap.Map, member string) partmap.MemberState {
	t.Helper()
	l, i, ok := m.Member(member)
	if !ok {
		t.Fatalf("no member %s in map v%d", member, m.Version)
	}
	return m.Layers[l].Members[i].State
}

// httpGet returns the body of GET url, or an error unless it answers 200.
func httpGet(ctx context.Context, url string) (string, error) {
	resp, err := httpget.Get(ctx, url)
	if err != nil {
		return "", err
	}
	if resp.Status != http.StatusOK {
		return resp.Body, fmt.Errorf("GET %s: %d %s", url, resp.Status, http.StatusText(resp.Status))
	}
	return resp.Body, nil
}

// TestControlLoopCommand runs `distcache controlloop` on a configuration
// file whose members are HTTP health servers and a map file at version 5:
// it serves /healthz once it has probed them, resumes from version 5, fails
// a member whose health check fails in version 6, records the event, and
// exports it in its metrics.
func TestControlLoopCommand(t *testing.T) {
	dir := t.TempDir()
	mapFile := filepath.Join(dir, "map.json")
	if out, err := runCommand(t, "map", "init", "--out", mapFile, "--layer", "spine=2", "--base-port", "7100"); err != nil {
		t.Fatalf("map init: %v\n%s", err, out)
	}
	m := readMap(t, mapFile)
	m.Version = 5
	if err := mapwatch.WriteFile(mapFile, m); err != nil {
		t.Fatal(err)
	}
	cfg := controlloop.FileConfig{
		MapFile: mapFile, EventsFile: filepath.Join(dir, "events.jsonl"), Interval: controlloop.Duration(20 * time.Millisecond),
		Policy: controlloop.PolicyOf(failover.Policy{Grace: 100 * time.Millisecond, HoldDown: 100 * time.Millisecond}),
	}
	health := map[string]*healthServer{}
	for _, mb := range m.Layers[0].Members {
		health[mb.Name] = newHealthServer(t)
		cfg.Members = append(cfg.Members, controlloop.MemberConfig{Name: mb.Name, HealthAddr: strings.TrimPrefix(health[mb.Name].srv.URL, "http://")})
	}
	configFile := filepath.Join(dir, "controlloop.json")
	if err := controlloop.WriteConfig(configFile, cfg); err != nil {
		t.Fatal(err)
	}
	ports, _, err := freeport.Ports("127.0.0.1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://127.0.0.1:" + strconv.Itoa(ports[0])

	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	finished := make(chan struct{})
	cmd := newRootCommand()
	cmd.SetArgs([]string{"controlloop", "--config", configFile, "--metrics-addr", strings.TrimPrefix(base, "http://"), "--log-level", "warn"})
	cmd.SetOut(&bytes.Buffer{})
	go func() { runErr = cmd.ExecuteContext(ctx); close(finished) }()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	poll.Eventually(t, "the control loop healthy", func() (bool, error) {
		_, err := httpGet(ctx, base+"/healthz")
		return err == nil, err
	})
	victim := "distcache-spine-1"
	health[victim].down.Store(true)
	poll.Until(t, victim+" failed", func() bool { return readMap(t, mapFile).Version > 5 })
	if got := readMap(t, mapFile); got.Version != 6 || memberState(t, got, victim) != partmap.Failed {
		t.Fatalf("published v%d with %s %s, want v6 Failed", got.Version, victim, memberState(t, got, victim))
	}
	poll.Eventually(t, "the event recorded", func() (bool, error) {
		events, err := controlloop.ReadEvents(cfg.EventsFile)
		return len(events) == 1 && events[0].Member == victim && events[0].MapVersion == 6, err
	})
	body, err := httpGet(ctx, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`distcache_controlloop_map_version{role="controlloop"} 6`,
		`distcache_controlloop_remaps_total{role="controlloop",to="Failed"} 1`,
		`distcache_controlloop_probe_failures_total{member="distcache-spine-0",role="controlloop"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	cancel()
	<-finished
	if runErr != nil {
		t.Fatalf("controlloop ended with %v", runErr)
	}
}

const loopCluster = `apiVersion: distcache.io/v1alpha1
kind: CacheCluster
metadata: {name: loop}
spec:
  storage: {racks: 2, shardsPerRack: 1}
  layers:
    - {name: spine, nodes: 2}
    - {name: leaf, boundToRacks: true}
  coherence: {servingLease: 500ms}
  failover: {gracePeriod: 1s, holdDown: 1s}
`

// grace is loopCluster's failover grace period.
const grace = time.Second

// TestControlLoopFaults runs `distcache up` and injects faults into its
// control loop process, found by kind in `distcache status --json`:
//   - SIGKILL: the data plane keeps its processes, the supervisor restarts
//     the loop (a new pid, one restart), and the restarted loop fences and
//     fails a node killed afterwards;
//   - SIGSTOP: the data plane serves; a node killed while the loop is
//     paused keeps its state in the map for twice the grace period; after
//     SIGCONT the loop fails it over;
//
// and `distcache down` then leaves nothing running.
func TestControlLoopFaults(t *testing.T) {
	bin := buildDistcache(t)
	file, runDir := clusterFile(t, bin, loopCluster)
	out, err := run(t, bin, "up", "-f", file, "--run-dir", runDir, "--probe-interval", "50ms")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	st := status(t, bin, runDir)
	loop := processOfKind(t, st, "controlloop")
	dataPlane := map[string]int{}
	for _, p := range st.Processes {
		if p.Kind != "controlloop" {
			dataPlane[p.Name] = p.PID
		}
	}
	api := control.Dial(runDir)
	ctx := context.Background()
	statusOf := func() control.Status {
		t.Helper()
		s, err := api.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// SIGKILL: restarted by the supervisor, the data plane untouched.
	if err := syscall.Kill(loop.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the control loop restarted", func() bool {
		l := processOfKind(t, statusOf(), "controlloop")
		return l.PID != 0 && l.PID != loop.PID && l.Ready
	})
	st = statusOf()
	if l := processOfKind(t, st, "controlloop"); l.Restarts != 1 || st.Phase != control.Ready || st.MapVersion != 1 {
		t.Fatalf("after the kill: loop %+v, phase %s, map v%d; want 1 restart, Ready, v1", l, st.Phase, st.MapVersion)
	}
	checkDataPlane(t, st, dataPlane)
	loop = processOfKind(t, st, "controlloop")
	c := newClient(t, st.MapFile)
	checkServes(t, c, "after-sigkill")

	// The restarted loop fences and fails a node.
	const spine = "loop-spine-1"
	if err := api.Kill(ctx, spine); err != nil {
		t.Fatal(err)
	}
	// The loop publishes a map, then appends its events: wait for both.
	wantEvents := []string{spine + " Active→Fenced v2", spine + " Fenced→Failed v3"}
	poll.Until(t, spine+" failed", func() bool {
		st := statusOf()
		return processNamed(t, st, spine).MemberState == string(partmap.Failed) && len(st.Events) >= len(wantEvents)
	})
	st = statusOf()
	if st.MapVersion != 3 || !equalEvents(st.Events, wantEvents) {
		t.Fatalf("after killing %s: map v%d, events %v; want v3, %v", spine, st.MapVersion, eventStrings(st.Events), wantEvents)
	}

	// SIGSTOP: the data plane serves, the map stands still.
	if err := syscall.Kill(loop.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	continued := false
	t.Cleanup(func() {
		if !continued {
			_ = syscall.Kill(loop.PID, syscall.SIGCONT)
		}
	})
	poll.Until(t, "the control loop paused and not ready", func() bool {
		return processState(loop.PID) == 'T' && !processOfKind(t, statusOf(), "controlloop").Ready
	})
	checkServes(t, c, "while-paused")
	const leaf = "loop-leaf-0"
	if err := api.Kill(ctx, leaf); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, leaf+" seen down", func() bool { return !processNamed(t, statusOf(), leaf).Ready })
	holdsFor(t, 2*grace, "the map unchanged while the loop is paused", func() error {
		s := statusOf()
		if s.MapVersion != 3 || processNamed(t, s, leaf).MemberState != string(partmap.Active) {
			return fmt.Errorf("map v%d with %s %s", s.MapVersion, leaf, processNamed(t, s, leaf).MemberState)
		}
		return nil
	})
	if err := syscall.Kill(loop.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued = true
	wantEvents = append(wantEvents, leaf+" Active→Fenced v4", leaf+" Fenced→Failed v5")
	poll.Until(t, leaf+" failed after the loop resumed", func() bool {
		st := statusOf()
		return processNamed(t, st, leaf).MemberState == string(partmap.Failed) && len(st.Events) >= len(wantEvents)
	})
	st = statusOf()
	if l := processOfKind(t, st, "controlloop"); l.PID != loop.PID || l.Restarts != 1 || st.MapVersion != 5 || !equalEvents(st.Events, wantEvents) {
		t.Fatalf("after SIGCONT: loop pid %d (was %d) with %d restarts, map v%d, events %v; want the same pid, 1 restart, v5, %v",
			l.PID, loop.PID, l.Restarts, st.MapVersion, eventStrings(st.Events), wantEvents)
	}

	out, err = run(t, bin, "down", "--run-dir", runDir)
	if err != nil || !strings.Contains(out, "nothing left running") {
		t.Fatalf("down: %v\n%s", err, out)
	}
	for _, p := range st.Processes {
		if p.PID != 0 && alive(p.PID) {
			t.Errorf("%s (pid %d) still running after down", p.Name, p.PID)
		}
	}
}

func processOfKind(t *testing.T, st control.Status, kind string) control.Process {
	t.Helper()
	var found []control.Process
	for _, p := range st.Processes {
		if p.Kind == kind {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d processes of kind %s in the status, want 1", len(found), kind)
	}
	return found[0]
}

func processNamed(t *testing.T, st control.Status, name string) control.Process {
	t.Helper()
	for _, p := range st.Processes {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no process %s in the status", name)
	return control.Process{}
}

// checkDataPlane checks that every data-plane process is ready and runs
// with the pid it had in pids.
func checkDataPlane(t *testing.T, st control.Status, pids map[string]int) {
	t.Helper()
	for name, pid := range pids {
		if p := processNamed(t, st, name); p.PID != pid || !p.Ready || p.Restarts != 0 {
			t.Errorf("%s: pid %d (was %d), ready %v, %d restarts; want it untouched and ready", name, p.PID, pid, p.Ready, p.Restarts)
		}
	}
}

// newClient is a client of the cluster whose map is at mapFile.
func newClient(t *testing.T, mapFile string) *client.Client {
	t.Helper()
	w, err := mapwatch.Load(mapFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster's data-plane key, next to its map in the run directory.
	var key dataKey
	if err := key.loadForRunDir(filepath.Dir(mapFile)); err != nil {
		t.Fatal(err)
	}
	cfg := client.Config{Maps: w}
	key.apply(&cfg.Transport)
	c, err := client.New(cfg, w.Current())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// checkServes writes a key through c and reads it back.
func checkServes(t *testing.T, c *client.Client, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	want := []byte("value of " + key)
	if err := c.Put(ctx, key, want); err != nil {
		t.Fatalf("cannot write %s: %v", key, err)
	}
	got, err := c.Get(ctx, key)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %s = %q, %v; want %q", key, got, err, want)
	}
}

// holdsFor checks cond at every poll for d and fails at the first poll
// where it does not hold. The absence of a change can only be observed
// over a window: d is a multiple of the failover grace period, within
// which a running control loop would have acted.
func holdsFor(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	end := time.After(d)
	for {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		select {
		case <-end:
			return
		case <-tick.C:
		}
	}
}

func eventStrings(events []control.Event) []string {
	out := make([]string, 0, len(events))
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s %s→%s v%d", e.Member, e.From, e.To, e.MapVersion))
	}
	return out
}

func equalEvents(events []control.Event, want []string) bool {
	return slices.Equal(eventStrings(events), want)
}

// processState is the state letter of process pid in /proc ('T' when
// stopped; 0 if gone).
func processState(pid int) byte {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}
