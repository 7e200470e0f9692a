// Command apioutage stops localkube's API server for a while and records
// what the data-plane pods serve meanwhile, from their metrics endpoints,
// scraped straight from the pods' addresses (Prometheus finds its targets
// through the API server). docs/benchmarks.md, "Hits with the API server
// stopped", shows a run.
//
//	apioutage [-mode stop|kill] [-before 3m] [-outage 10m] [-after 3m] [-every 5s]
//	          [-state DIR] [-kubeconfig FILE] -out DIR URL...
//	apioutage -load LOG -report JSON -stop TIME -back TIME [-load-mode distcache] [-interval 250ms]
//	apioutage -replay DIR [-mode ...] [-before ...] [-outage ...] [-after ...] [-every ...]
//
// Each URL is a data-plane pod's /metrics (as http://198.18.0.3:9100/metrics).
// The run scrapes every URL each -every for -before, stops the API server,
// scrapes on for -outage, brings it back, and scrapes for -after more. Then
// it writes, into -out:
//   - samples.tsv: every non-zero distcache_ series of every scrape (when
//     the scrape started, URL, series, value), and the failed scrapes;
//   - events.tsv: what it did, and when;
//   - minutes.md: per minute since the stop, the cache nodes' GET hits and
//     misses per second (role="node", summed), their shim lease grants and
//     failures, the lowest distcache_lease_valid and the map versions seen;
//     and the pods' readiness and restarts before the stop and after;
//   - window.env: STOP and BACK, the scrapes (RFC 3339) that start minute 0
//     and the first minute after the outage.
//
// With -load, it writes instead the same minutes of a load that ran
// meanwhile, from the JSON report of `distcache bench` and its log as
// `kubectl logs --timestamps` prints it (which tells when its window
// started): operations, errors, timeouts and the clients' hit share per
// minute since -stop (hack/localkube/apiserver-outage.sh runs both).
// With -replay, it writes the per-minute table of the run in DIR again,
// from DIR's samples.tsv and window.env (the other flags must be the
// run's).
//
// The API server is the process whose PID localkube wrote in
// DIR/pid/kube-apiserver (DIR is -state, localkube's LOCALKUBE_DIR). Mode
// stop sends it SIGSTOP and later SIGCONT: it holds its connections and
// answers none. Mode kill ends it as localkube.sh down does (SIGTERM,
// SIGKILL after a minute; the scrapes go on meanwhile: it answers no new
// request once it has the SIGTERM) and later starts it again with the command line,
// environment and working directory it had, its output appended to
// DIR/log/kube-apiserver.log, and its new PID written to the PID file (so
// that localkube.sh down stops it). An interrupt (SIGINT, SIGTERM) or an
// error restores it at once. Once it is back, the run waits (at most 2
// minutes) for /readyz and then (at most 5 minutes) for the node and every
// pod to be Ready, through -kubeconfig (default DIR/admin.kubeconfig).
//
// It signals no process but that one, and starts none but its
// replacement.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "apioutage:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	mode                  string
	before, outage, after time.Duration
	every                 time.Duration
	state, kubeconfig     string
	out                   string
	urls                  []string

	load, report string
	replay       string
	loadMode     string
	stop, back   string
	interval     time.Duration
}

// Bounds of a run: it ends by itself within an hour.
const (
	maxOutage = 30 * time.Minute
	maxPhase  = 15 * time.Minute
)

func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("apioutage", flag.ContinueOnError)
	fs.StringVar(&o.mode, "mode", "stop", "stop (SIGSTOP, then SIGCONT) or kill (SIGTERM, then start it again)")
	fs.DurationVar(&o.before, "before", 3*time.Minute, "scraping before the stop (whole minutes)")
	fs.DurationVar(&o.outage, "outage", 10*time.Minute, "how long the API server stays stopped (whole minutes, at most 30m)")
	fs.DurationVar(&o.after, "after", 3*time.Minute, "scraping after it is back")
	fs.DurationVar(&o.every, "every", 5*time.Second, "scrape period (1s to 1m, dividing a minute)")
	fs.StringVar(&o.state, "state", envOr("LOCALKUBE_DIR", "/var/lib/distcache-localkube"), "localkube's state directory")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for the readiness checks (default STATE/admin.kubeconfig)")
	fs.StringVar(&o.out, "out", "", "directory for samples.tsv, events.tsv, minutes.md and window.env")
	fs.StringVar(&o.load, "load", "", "the load's log: write its per-minute table and do nothing else")
	fs.StringVar(&o.report, "report", "", "with -load: the load's JSON report (distcache bench --out DIR: DIR/report.json)")
	fs.StringVar(&o.replay, "replay", "", "a finished run's -out: write its per-minute table again and do nothing else")
	fs.StringVar(&o.loadMode, "load-mode", "distcache", "the bench mode whose timeline -load reads")
	fs.StringVar(&o.stop, "stop", "", "with -load: when the outage started (RFC 3339; STOP of window.env)")
	fs.StringVar(&o.back, "back", "", "with -load: when it ended (BACK of window.env)")
	fs.DurationVar(&o.interval, "interval", 250*time.Millisecond, "with -load: the bench timeline's bin")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.load != "" {
		return o, nil
	}
	o.urls = fs.Args()
	if o.replay != "" {
		o.out, o.urls = o.replay, []string{"(from samples.tsv)"}
	}
	if o.kubeconfig == "" {
		o.kubeconfig = filepath.Join(o.state, "admin.kubeconfig")
	}
	switch {
	case o.mode != "stop" && o.mode != "kill":
		return o, fmt.Errorf("-mode %q: want stop or kill", o.mode)
	case o.out == "":
		return o, errors.New("-out is required")
	case len(o.urls) == 0:
		return o, errors.New("no metrics URL given")
	case o.every < time.Second || o.every > time.Minute || time.Minute%o.every != 0:
		return o, fmt.Errorf("-every %v: want 1s to 1m, dividing a minute", o.every)
	case o.before < time.Minute || o.before > maxPhase || o.before%time.Minute != 0:
		return o, fmt.Errorf("-before %v: want whole minutes, 1m to %v", o.before, maxPhase)
	case o.outage < time.Minute || o.outage > maxOutage || o.outage%time.Minute != 0:
		return o, fmt.Errorf("-outage %v: want whole minutes, 1m to %v", o.outage, maxOutage)
	case o.after < 0 || o.after > maxPhase:
		return o, fmt.Errorf("-after %v: want 0 to %v", o.after, maxPhase)
	}
	return o, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func run(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	if o.load != "" {
		stop, err := time.Parse(time.RFC3339Nano, o.stop)
		if err != nil {
			return fmt.Errorf("-stop: %w", err)
		}
		back, err := time.Parse(time.RFC3339Nano, o.back)
		if err != nil {
			return fmt.Errorf("-back: %w", err)
		}
		return loadTable(os.Stdout, o.load, o.report, o.loadMode, stop, back, o.interval)
	}
	if o.replay != "" {
		return replay(os.Stdout, o.replay, o)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ev, err := newEvents(filepath.Join(o.out, "events.tsv"))
	if err != nil {
		return err
	}
	defer ev.close()
	api, err := findAPIServer(o.state)
	if err != nil {
		return err
	}
	ev.log("API server pid %d (%s), mode %s", api.pid, strings.Join(api.argv[:1], " "), o.mode)
	kube, err := kubeClient(o.kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	podsBefore, err := podStates(ctx, kube)
	if err != nil {
		return fmt.Errorf("cannot list the pods before the stop: %w", err)
	}

	s, err := newScraper(o.urls, filepath.Join(o.out, "samples.tsv"), min(2*time.Second, o.every))
	if err != nil {
		return err
	}
	defer s.close()

	start := time.Now()
	t0 := start.Add(o.before)
	t1 := t0.Add(o.outage)
	end := t1.Add(o.after)
	ev.log("scraping %d URLs every %v; stop at %s, back at %s, end at %s", len(o.urls), o.every,
		stamp(t0), stamp(t1), stamp(end))

	// The stop runs beside the scrapes (a kill waits up to a minute for
	// the old process to end); bringing it back waits for it first.
	stopped := false
	var halted chan error
	restore := func() error {
		if !stopped {
			return nil
		}
		stopped = false
		if err := <-halted; err != nil {
			ev.log("cannot stop the API server: %v", err)
		}
		if err := api.resume(o.state); err != nil {
			ev.log("cannot bring the API server back: %v", err)
			return err
		}
		ev.log("API server back (pid %d)", api.pid)
		return nil
	}
	defer func() { _ = restore() }()

	var ready sync.WaitGroup
	var readyErr error
	var podsAfter []podState
	tick := time.NewTicker(o.every)
	defer tick.Stop()
	s.scrapeAll(time.Now())
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			ev.log("interrupted")
			if err := restore(); err != nil {
				return err
			}
			return ctx.Err()
		case <-tick.C:
		}
		now = time.Now() // a tick waits in the ticker while a scrape is late
		s.scrapeAll(now)
		switch {
		case !stopped && now.Before(t1) && !now.Before(t0.Add(-o.every/2)):
			halted = make(chan error, 1)
			go func() {
				err := api.halt(o.mode)
				if err == nil {
					ev.log("API server stopped (%s)", o.mode)
				}
				halted <- err
			}()
			stopped = true
			t0 = now // minute 0 starts with this scrape
			ev.log("stopping the API server (%s)", o.mode)
			s.mark("stop", time.Now())
		case stopped && !now.Before(t1.Add(-o.every/2)):
			if err := restore(); err != nil {
				return err
			}
			t1 = now
			s.mark("back", time.Now())
			ready.Add(1)
			go func() {
				defer ready.Done()
				podsAfter, readyErr = waitReady(ctx, kube, ev)
			}()
		}
		if !now.Before(end.Add(-o.every / 2)) {
			break
		}
	}
	ready.Wait()
	window := fmt.Sprintf("STOP=%s\nBACK=%s\n", t0.UTC().Format(time.RFC3339Nano), t1.UTC().Format(time.RFC3339Nano))
	if err := os.WriteFile(filepath.Join(o.out, "window.env"), []byte(window), 0o644); err != nil {
		return err
	}
	if readyErr != nil {
		ev.log("not everything Ready again: %v", readyErr)
	}
	f, err := os.Create(filepath.Join(o.out, "minutes.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	w := io.MultiWriter(f, os.Stdout)
	s.writeMinutes(w, t0, t1, o)
	writePods(w, podsBefore, podsAfter)
	return readyErr
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05") }

// phaseOf is the API server's state in the minute from: stopped if the
// minute starts at the stop or later and at least half a minute before
// it came back (the scrape that starts the first minute after the outage
// is a few microseconds later than the stop's scrape plus the outage).
func phaseOf(from, stop, back time.Time) string {
	if !from.Before(stop) && from.Before(back.Add(-30*time.Second)) {
		return "**stopped**"
	}
	return "up"
}

// events is events.tsv, and standard error.
type events struct {
	mu sync.Mutex
	f  *os.File
}

func newEvents(path string) (*events, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &events{f: f}, nil
}

func (e *events) log(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	fmt.Fprintf(e.f, "%s\t%s\n", now, msg)
	fmt.Fprintf(os.Stderr, "apioutage: %s %s\n", now, msg)
}

func (e *events) close() { _ = e.f.Close() }

// apiServer is localkube's kube-apiserver process.
type apiServer struct {
	pid  int
	argv []string
	env  []string
	dir  string
}

// findAPIServer reads the PID localkube recorded and checks that it is a
// running kube-apiserver, not stopped.
func findAPIServer(state string) (*apiServer, error) {
	raw, err := os.ReadFile(filepath.Join(state, "pid", "kube-apiserver"))
	if err != nil {
		return nil, fmt.Errorf("no localkube API server: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 1 {
		return nil, fmt.Errorf("bad PID file %q", raw)
	}
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
	if err != nil {
		return nil, fmt.Errorf("API server pid %d not running: %w", pid, err)
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if filepath.Base(argv[0]) != "kube-apiserver" {
		return nil, fmt.Errorf("pid %d is %q, not kube-apiserver", pid, argv[0])
	}
	if st, err := procState(pid); err != nil || st != "R" && st != "S" && st != "D" {
		return nil, fmt.Errorf("API server pid %d is in state %q (%v): not running", pid, st, err)
	}
	environ, err := os.ReadFile(filepath.Join(proc, "environ"))
	if err != nil {
		return nil, err
	}
	dir, err := os.Readlink(filepath.Join(proc, "cwd"))
	if err != nil {
		return nil, err
	}
	var env []string
	if s := strings.TrimRight(string(environ), "\x00"); s != "" {
		env = strings.Split(s, "\x00")
	}
	return &apiServer{pid: pid, argv: argv, env: env, dir: dir}, nil
}

// procState is the state letter of /proc/PID/stat.
func procState(pid int) (string, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", err
	}
	i := strings.LastIndexByte(string(raw), ')')
	f := strings.Fields(string(raw[i+1:]))
	if len(f) == 0 {
		return "", errors.New("short stat")
	}
	return f[0], nil
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := procState(pid)
	return err == nil && st != "Z"
}

// halt stops the API server: SIGSTOP, or SIGTERM and SIGKILL after a
// minute.
func (a *apiServer) halt(mode string) error {
	if mode == "stop" {
		return syscall.Kill(a.pid, syscall.SIGSTOP)
	}
	if err := syscall.Kill(a.pid, syscall.SIGTERM); err != nil {
		return err
	}
	for i := 0; i < 120 && alive(a.pid); i++ {
		time.Sleep(500 * time.Millisecond)
	}
	if alive(a.pid) {
		_ = syscall.Kill(a.pid, syscall.SIGKILL)
		for i := 0; i < 20 && alive(a.pid); i++ {
			time.Sleep(500 * time.Millisecond)
		}
	}
	a.pid = -a.pid // ended: resume starts a new one
	return nil
}

// resume brings the API server back: SIGCONT to a stopped one, or a new
// process with the old one's command line.
func (a *apiServer) resume(state string) error {
	if a.pid > 0 {
		return syscall.Kill(a.pid, syscall.SIGCONT)
	}
	logf, err := os.OpenFile(filepath.Join(state, "log", "kube-apiserver.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(a.argv[0], a.argv[1:]...)
	cmd.Env, cmd.Dir = a.env, a.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	a.pid = cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(state, "pid", "kube-apiserver"), []byte(strconv.Itoa(a.pid)+"\n"), 0o644); err != nil {
		return err
	}
	return cmd.Process.Release()
}

func kubeClient(path string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	cfg.UserAgent = "apioutage"
	return kubernetes.NewForConfig(cfg)
}

// podState is one pod's readiness and restarts.
type podState struct {
	name     string // namespace/name
	ready    bool
	restarts int32
}

func podStates(ctx context.Context, kube *kubernetes.Clientset) ([]podState, error) {
	list, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []podState
	for _, p := range list.Items {
		st := podState{name: p.Namespace + "/" + p.Name}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				st.ready = c.Status == corev1.ConditionTrue
			}
		}
		for _, c := range p.Status.ContainerStatuses {
			st.restarts += c.RestartCount
		}
		if p.Status.Phase == corev1.PodSucceeded {
			st.ready = true // a completed Job's pod
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// waitReady waits for /readyz, then for the node and every pod to be Ready.
func waitReady(ctx context.Context, kube *kubernetes.Clientset, ev *events) ([]podState, error) {
	start := time.Now()
	deadline := start.Add(2 * time.Minute)
	for {
		_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("API server not ready after %v: %w", time.Since(start).Round(time.Second), err)
		}
		time.Sleep(time.Second)
	}
	ev.log("API server ready (/readyz) %.1fs after it was back", time.Since(start).Seconds())
	deadline = time.Now().Add(5 * time.Minute)
	for {
		pods, err := podStates(ctx, kube)
		var notReady []string
		if err == nil {
			for _, p := range pods {
				if !p.ready {
					notReady = append(notReady, p.name)
				}
			}
			node, nerr := kube.CoreV1().Nodes().Get(ctx, "localkube", metav1.GetOptions{})
			if nerr != nil {
				err = nerr
			} else if !nodeReady(node) {
				notReady = append(notReady, "node/localkube")
			}
		}
		if err == nil && len(notReady) == 0 {
			ev.log("node and all %d pods Ready %.1fs after the API server was back", len(pods), time.Since(start).Seconds())
			return pods, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("not Ready: %s", strings.Join(notReady, ", "))
			}
			return pods, err
		}
		time.Sleep(2 * time.Second)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func writePods(w io.Writer, before, after []podState) {
	fmt.Fprintf(w, "\n| pod | Ready before | restarts before | Ready after | restarts after |\n|---|---|---:|---|---:|\n")
	got := map[string]podState{}
	for _, p := range after {
		got[p.name] = p
	}
	seen := map[string]bool{}
	for _, p := range before {
		seen[p.name] = true
		a, ok := got[p.name]
		if !ok {
			fmt.Fprintf(w, "| %s | %v | %d | (gone) | |\n", p.name, p.ready, p.restarts)
			continue
		}
		fmt.Fprintf(w, "| %s | %v | %d | %v | %d |\n", p.name, p.ready, p.restarts, a.ready, a.restarts)
	}
	for _, p := range after {
		if !seen[p.name] {
			fmt.Fprintf(w, "| %s | (new) | | %v | %d |\n", p.name, p.ready, p.restarts)
		}
	}
}

// scrape is one URL's series (nil: the scrape failed), scraped at the
// tick at and received at got.
type scrape struct {
	at, got time.Time
	series  map[string]float64
}

// scraper scrapes the URLs and keeps what the table needs.
type scraper struct {
	urls    []string
	client  *http.Client
	mu      sync.Mutex
	out     *bufio.Writer
	f       *os.File
	scrapes map[string][]scrape // by URL
}

func newScraper(urls []string, path string, timeout time.Duration) (*scraper, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &scraper{urls: urls, client: &http.Client{Timeout: timeout}, f: f, out: bufio.NewWriter(f),
		scrapes: map[string][]scrape{}}, nil
}

func (s *scraper) close() {
	_ = s.out.Flush()
	_ = s.f.Close()
}

func (s *scraper) mark(what string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, "%s\t-\t# %s\t\n", at.UTC().Format(time.RFC3339Nano), what)
}

// scrapeAll scrapes every URL at once and waits for them.
func (s *scraper) scrapeAll(at time.Time) {
	var wg sync.WaitGroup
	for _, u := range s.urls {
		wg.Go(func() {
			series, err := s.get(u)
			got := time.Now()
			s.mu.Lock()
			defer s.mu.Unlock()
			ts := at.UTC().Format(time.RFC3339Nano)
			if err != nil {
				fmt.Fprintf(s.out, "%s\t%s\t# failed: %v\t\n", ts, u, err)
				s.scrapes[u] = append(s.scrapes[u], scrape{at: at})
				return
			}
			keys := make([]string, 0, len(series))
			for k, v := range series {
				if v != 0 {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(s.out, "%s\t%s\t%s\t%g\n", ts, u, k, series[k])
			}
			s.scrapes[u] = append(s.scrapes[u], scrape{at: at, got: got, series: series})
		})
	}
	wg.Wait()
	s.mu.Lock()
	_ = s.out.Flush()
	s.mu.Unlock()
}

// get scrapes one URL: its distcache_ series, by name{labels}.
func (s *scraper) get(u string) (map[string]float64, error) {
	resp, err := s.client.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, fam := range fams {
		if !strings.HasPrefix(name, "distcache_") {
			continue
		}
		for _, m := range fam.GetMetric() {
			var v float64
			switch {
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetUntyped() != nil:
				v = m.GetUntyped().GetValue()
			default:
				continue
			}
			out[seriesKey(name, m.GetLabel())] = v
		}
	}
	return out, nil
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l.GetName()+"="+strconv.Quote(l.GetValue()))
	}
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// sum adds the series of name whose labels include every one of want.
func sum(series map[string]float64, name string, want ...string) float64 {
	var t float64
	for k, v := range series {
		if !strings.HasPrefix(k, name+"{") {
			continue
		}
		ok := true
		for _, w := range want {
			if !strings.Contains(k, w) {
				ok = false
				break
			}
		}
		if ok {
			t += v
		}
	}
	return t
}

// node metrics the table shows.
const (
	nodeRole = `role="node"`
	getOp    = `op="GET"`
)

// writeMinutes writes the per-minute table: minute k covers
// [t0+k·1m, t0+(k+1)·1m), where t0 is the stop (k < 0: before it).
func (s *scraper) writeMinutes(w io.Writer, t0, t1 time.Time, o options) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(w, "API server stopped (%s) at %s, back at %s (%.0f s). Scrapes every %v of %s.\n\n",
		o.mode, t0.UTC().Format(time.RFC3339), t1.UTC().Format(time.RFC3339), t1.Sub(t0).Seconds(), o.every, strings.Join(o.urls, " "))
	fmt.Fprintf(w, "| minute | from (UTC) | API server | node GET hits/s | GET misses/s | hit share | hits / before | shim lease grants | lease failures | lowest lease_valid | map versions | failed scrapes |\n")
	fmt.Fprintf(w, "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	first := -int(o.before / time.Minute)
	last := int((o.outage + o.after + time.Minute - 1) / time.Minute)
	type row struct {
		hits, misses, grants, fails float64
		valid                       float64
		versions                    map[float64]bool
		failed                      int
		ok                          bool
	}
	rows := map[int]*row{}
	for k := first; k < last; k++ {
		from, to := t0.Add(time.Duration(k)*time.Minute), t0.Add(time.Duration(k+1)*time.Minute)
		r := &row{valid: 1, versions: map[float64]bool{}}
		rows[k] = r
		for _, u := range s.urls {
			a, b, failed := bounds(s.scrapes[u], from, to)
			r.failed += failed
			for _, sc := range s.scrapes[u] {
				if sc.at.Before(from) || !sc.at.Before(to) || sc.series == nil {
					continue
				}
				for k, v := range sc.series {
					if strings.HasPrefix(k, "distcache_lease_valid{") && strings.Contains(k, nodeRole) {
						r.valid = min(r.valid, v)
					}
				}
				for k, v := range sc.series {
					if strings.HasPrefix(k, "distcache_map_version{") {
						r.versions[v] = true
					}
				}
			}
			if a == nil || b == nil {
				continue
			}
			d := b.got.Sub(a.got).Seconds()
			if d <= 0 {
				continue
			}
			r.hits += (sum(b.series, "distcache_requests_total", nodeRole, getOp, `result="hit"`) - sum(a.series, "distcache_requests_total", nodeRole, getOp, `result="hit"`)) / d
			r.misses += (sum(b.series, "distcache_requests_total", nodeRole, getOp, `result="miss"`) - sum(a.series, "distcache_requests_total", nodeRole, getOp, `result="miss"`)) / d
			r.grants += sum(b.series, "distcache_shim_lease_grants_total", nodeRole) - sum(a.series, "distcache_shim_lease_grants_total", nodeRole)
			r.fails += sum(b.series, "distcache_shim_lease_failures_total", nodeRole) - sum(a.series, "distcache_shim_lease_failures_total", nodeRole)
			r.ok = true
		}
	}
	var beforeHits float64
	var n int
	for k := first; k < 0; k++ {
		if rows[k].ok {
			beforeHits += rows[k].hits
			n++
		}
	}
	if n > 0 {
		beforeHits /= float64(n)
	}
	for k := first; k < last; k++ {
		r := rows[k]
		from := t0.Add(time.Duration(k) * time.Minute)
		phase := phaseOf(from, t0, t1)
		if !r.ok {
			fmt.Fprintf(w, "| %d | %s | %s | | | | | | | | | %d |\n", k, stamp(from), phase, r.failed)
			continue
		}
		share, ratio := "", ""
		if r.hits+r.misses > 0 {
			share = fmt.Sprintf("%.1f %%", 100*r.hits/(r.hits+r.misses))
		}
		if beforeHits > 0 {
			ratio = fmt.Sprintf("%.1f %%", 100*r.hits/beforeHits)
		}
		var vs []string
		for v := range r.versions {
			vs = append(vs, strconv.FormatFloat(v, 'f', -1, 64))
		}
		slices.Sort(vs)
		fmt.Fprintf(w, "| %d | %s | %s | %.1f | %.1f | %s | %s | %.0f | %.0f | %.0f | %s | %d |\n",
			k, stamp(from), phase, r.hits, r.misses, share, ratio, r.grants, r.fails, r.valid, strings.Join(vs, ", "), r.failed)
	}
	fmt.Fprintf(w, "\nMinutes before the stop: %.1f node GET hits/s on average (the reference of \"hits / before\").\n", beforeHits)
}

// bounds returns the first and the last successful scrape in [from, to]
// (a scrape at to starts the next minute too), and how many in [from, to)
// failed.
func bounds(scrapes []scrape, from, to time.Time) (a, b *scrape, failed int) {
	for i := range scrapes {
		sc := &scrapes[i]
		if sc.at.Before(from) || sc.at.After(to) {
			continue
		}
		if sc.series == nil {
			if sc.at.Before(to) {
				failed++
			}
			continue
		}
		if a == nil {
			a = sc
		}
		b = sc
	}
	return a, b, failed
}
