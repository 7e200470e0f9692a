package controlloop

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// ProbeTimeout bounds one health check of HTTPProber: a member that does
// not answer in time (stopped, overloaded) is not Ready. Open bounds the
// checks by a few intervals too, so a paused member, which accepts the
// connection and never answers, delays a step by no more than that.
const ProbeTimeout = 500 * time.Millisecond

// HTTPProber checks members by GET http://<health address>/healthz, as a
// kubelet's readiness probe does: Ready when it answers 200 in time. A
// member that refuses the connection or answers another status is not
// Ready at once (a dead process); one that does not answer in time is not
// Ready once its checks have gone unanswered for the patience (a paused
// process, or a starved machine's hiccup, which the patience absorbs).
type HTTPProber struct {
	addrs    map[string]string // member name → health address
	client   *http.Client
	patience *patience
	// reported, when set, records the utilization each answer carries
	// (for the PING prober's gray failure patience).
	reported *utilizations
}

// NewHTTPProber probes the members of addrs (member name → host:port),
// each check bounded by timeout (ProbeTimeout if not positive), with the
// given patience for unanswered checks.
func NewHTTPProber(addrs map[string]string, timeout, patience time.Duration) *HTTPProber {
	if timeout <= 0 {
		timeout = ProbeTimeout
	}
	return &HTTPProber{addrs: addrs, patience: newPatience(patience), client: &http.Client{Timeout: timeout, Transport: &http.Transport{
		MaxIdleConnsPerHost: 2, DisableCompression: true,
	}}}
}

// Ready implements Prober; a member without an address is not Ready.
func (p *HTTPProber) Ready(ctx context.Context, member string) bool {
	addr, ok := p.addrs[member]
	if !ok {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false
	}
	start := p.patience.now()
	resp, err := p.client.Do(req)
	var nerr net.Error
	switch {
	case err != nil && ctx.Err() != nil:
		return false // cut short by the caller (AllProbers): no verdict
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.As(err, &nerr) && nerr.Timeout()):
		return p.patience.judge(member, start, unanswered)
	case err != nil:
		return p.patience.judge(member, start, refused)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return p.patience.judge(member, start, refused)
	}
	if p.reported != nil {
		p.reported.record(member, resp.Header)
	}
	return p.patience.judge(member, start, answered)
}

// outcome is how a health check ended.
type outcome int

const (
	answered   outcome = iota // healthy
	refused                   // a definite failure: connection refused, unhealthy status
	unanswered                // no answer in time
)

// patience lets a member's checks go unanswered for a while before it
// counts as not Ready.
type patience struct {
	d   time.Duration
	now func() time.Time // a field so tests can move time

	mu    sync.Mutex           // guards since
	since map[string]time.Time // member → start of its first unanswered check in a row
}

func newPatience(d time.Duration) *patience {
	return &patience{d: d, now: time.Now, since: map[string]time.Time{}}
}

// judge records a check of member started at start with outcome o and
// reports whether the member is Ready: answered, or unanswered for less
// than the patience so far.
func (p *patience) judge(member string, start time.Time, o outcome) bool {
	return p.judgeWithin(member, start, o, p.d)
}

// judgeWithin is judge with patience d for this check.
func (p *patience) judgeWithin(member string, start time.Time, o outcome, d time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o != unanswered {
		delete(p.since, member)
		return o == answered
	}
	since, ok := p.since[member]
	if !ok {
		since = start
		p.since[member] = since
	}
	return p.now().Sub(since) < d
}

// AllProbers is Ready when every one of its probers is. They are asked at
// once, and the first that says not Ready ends the check (the others'
// contexts are cancelled), so a dead member, which refuses HTTP at once,
// does not wait for its PING to time out.
type AllProbers []Prober

// Ready implements Prober.
func (ps AllProbers) Ready(ctx context.Context, member string) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan bool, len(ps))
	for _, p := range ps {
		go func() { results <- p.Ready(ctx, member) }()
	}
	for range ps {
		if !<-results {
			return false
		}
	}
	return true
}

// Close closes the probers that hold resources.
func (ps AllProbers) Close() error {
	var errs []error
	for _, p := range ps {
		if c, ok := p.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
