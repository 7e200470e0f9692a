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
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
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
