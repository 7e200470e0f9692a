package fault

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/distcache/distcache/standalone/control"
	"github.com/distcache/distcache/standalone/faults"
)

// statusTimeout bounds one status call: the daemon may be paused by a
// control-loop fault.
const statusTimeout = 2 * time.Second

// cluster is a standalone cluster running in a namespace of its own.
type cluster struct {
	bin    string
	ns     *faults.Namespace
	runDir string
	ctl    *control.Client
	http   *http.Client // dials inside the namespace

	mu   sync.Mutex     // guards last, pids and done
	last control.Status // the last status read
	pids map[int]string // every PID seen, with its process name
	done bool           // torn down
}

// startCluster creates namespace nsName, starts the cluster of file in it
// with its run directory in dir and upArgs as further flags of `distcache
// up` (default: --map-poll 100ms), and registers its teardown (which the
// caller may also run earlier, through teardown).
func startCluster(t *testing.T, nsName, file, dir string, upArgs ...string) *cluster {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	ns, err := faults.CreateNamespace(ctx, nsName)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{
		bin: distcache(t), ns: ns, runDir: filepath.Join(dir, "run"), pids: map[int]string{},
	}
	c.ctl = control.Dial(c.runDir)
	c.http = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var conn net.Conn
			err := ns.Do(func() error {
				var d net.Dialer
				var err error
				conn, err = d.DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		},
		DisableKeepAlives: true,
	}}
	t.Cleanup(func() {
		for _, err := range c.teardown() {
			t.Error(err)
		}
	})
	if len(upArgs) == 0 {
		upArgs = []string{"--map-poll", "100ms"}
	}
	out, err := ns.Run(ctx, c.bin, append([]string{"up", "-f", file, "--run-dir", c.runDir}, upArgs...)...)
	if err != nil {
		t.Fatalf("cannot start the cluster: %v\n%s", err, out)
	}
	if _, err := c.status(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// status reads the cluster's status and remembers every PID in it.
func (c *cluster) status(ctx context.Context) (control.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	st, err := c.ctl.Status(ctx)
	if err != nil {
		return st, fmt.Errorf("cannot read the cluster's status: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = st
	c.pids[st.PID] = "daemon"
	for _, p := range st.Processes {
		if p.PID > 0 {
			c.pids[p.PID] = p.Name
		}
	}
	return st, nil
}

// lastStatus is the status last read.
func (c *cluster) lastStatus() control.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// process returns the named process from a fresh status, or from the last
// one if the cluster does not answer (its daemon paused).
func (c *cluster) process(ctx context.Context, name string) (control.Process, error) {
	st, err := c.status(ctx)
	if err != nil {
		st = c.lastStatus()
	}
	for _, p := range st.Processes {
		if p.Name == name {
			return p, nil
		}
	}
	return control.Process{}, fmt.Errorf("no process %s in the cluster", name)
}

// mapVersion is the published map version (0 if the cluster does not
// answer).
func (c *cluster) mapVersion(ctx context.Context) int64 {
	st, err := c.status(ctx)
	if err != nil {
		return 0
	}
	return st.MapVersion
}

// track remembers a PID started in the namespace (the checker's).
func (c *cluster) track(pid int, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pids[pid] = name
}

// ours reports whether pid runs in the cluster's namespace: faults only
// ever signal those.
func (c *cluster) ours(pid int) bool {
	pids, err := faults.PIDsIn(c.ns.Name())
	if err != nil {
		return false
	}
	for _, p := range pids {
		if p == pid {
			return true
		}
	}
	return false
}

// teardown stops the cluster with `distcache down` and checks that every
// process it or the test started is gone and that the namespace is
// deleted. It runs once; later calls return nil.
func (c *cluster) teardown() []error {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return nil
	}
	c.done = true
	c.mu.Unlock()
	ctx := context.Background()
	var errs []error
	// A process left paused by a failed test would not stop on SIGTERM.
	if pids, err := faults.PIDsIn(c.ns.Name()); err == nil {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	if out, err := c.ns.Run(ctx, c.bin, "down", "--run-dir", c.runDir); err != nil {
		errs = append(errs, fmt.Errorf("distcache down: %w\n%s", err, out))
	}
	// Whatever is left in the namespace was started by this test.
	if pids, err := faults.PIDsIn(c.ns.Name()); err == nil && len(pids) > 0 {
		errs = append(errs, fmt.Errorf("processes left in namespace %s after distcache down: %v", c.ns.Name(), pids))
		for _, pid := range pids {
			_ = faults.Kill(pid)
		}
	}
	c.mu.Lock()
	pids := make(map[int]string, len(c.pids))
	for pid, name := range c.pids {
		pids[pid] = name
	}
	c.mu.Unlock()
	if err := waitGone(pids); err != nil {
		errs = append(errs, err)
	}
	if err := c.ns.Delete(ctx); err != nil {
		errs = append(errs, err)
	}
	if faults.NamespaceExists(c.ns.Name()) {
		errs = append(errs, fmt.Errorf("namespace %s still exists", c.ns.Name()))
	}
	return errs
}

// waitGone polls (for at most 30 s) until none of pids is alive.
func waitGone(pids map[int]string) error {
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var left []string
		for pid, name := range pids {
			if faults.Alive(pid) {
				left = append(left, name+"="+strconv.Itoa(pid))
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still running after the teardown: %v", left)
		}
		<-tick.C
	}
}

// metric sums the samples of a metric family that a process serves on its
// metrics address (reached inside the namespace).
func (c *cluster) metric(ctx context.Context, addr, family string, labels map[string]string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	return sumMetric(resp.Body, family, labels)
}

// readFileTail returns the last n bytes of a file, for failure messages.
func readFileTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b[max(len(b)-n, 0):])
}
