package cacheswitch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/distcache/distcache/placement/partmap"
)

// ErrNoSession says the switch has no live session (it is unreachable,
// or another controller is primary): its lease is not renewed.
var ErrNoSession = errors.New("no session with the switch")

// Session is a driver's primary session with a switch (stratum.Conn).
type Session interface {
	Device
	SetPipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error
	Done() <-chan struct{}
	Err() error
	Close() error
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	// Dial opens a session with the switch.
	Dial func(ctx context.Context) (Session, error)
	// Controller configures each session's controller.
	Controller Config
	// DeviceConfig is the target's compiled program (none for the
	// software switch).
	DeviceConfig []byte
	// Cookie names Controller.Info and DeviceConfig, pushed with them: a
	// content hash (package fabric/pipeline), the same for the same build.
	Cookie uint64
	// Interval is the insertion interval (DefaultInterval).
	Interval time.Duration
	// Retry is the wait before dialing again after a session ends (1 s
	// when 0).
	Retry time.Duration
	// OnChange, when set, is called with the runner's state whenever it
	// changes: a session programmed the switch, or it ended or could not
	// start for another reason than the last time.
	OnChange func(State)
	Logger   *slog.Logger
}

// State is a runner's session as last seen.
type State struct {
	// Programmed says a session is up and the switch runs the pipeline
	// pushed in it.
	Programmed bool
	// Since is when Programmed last changed (the runner's creation until
	// it first does).
	Since time.Time
	// Err is why the last session ended or could not start; nil while
	// programmed.
	Err error
	// Sessions counts the sessions that programmed the switch: each
	// started it empty.
	Sessions int
}

// Runner keeps one switch programmed across sessions: it dials, pushes
// the pipeline — so that the switch starts empty, with no valid copy and
// no lease, whether it restarted or this controller did — runs a
// Controller until the session ends, and dials again.
type Runner struct {
	cfg RunnerConfig
	log *slog.Logger

	mu    sync.Mutex // guards cur, state
	cur   *Controller
	state State
	build build // the compiled program pushed, and what the session runs (upgrade.go)

	programmed     chan struct{} // closed once the first session programmed the switch
	programmedOnce sync.Once
}

// NewRunner returns a runner; Run starts it.
func NewRunner(cfg RunnerConfig) *Runner {
	if cfg.Retry == 0 {
		cfg.Retry = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{cfg: cfg, log: cfg.Logger.With("member", cfg.Controller.Member), programmed: make(chan struct{}),
		state: State{Since: time.Now()}, build: build{deviceConfig: cfg.DeviceConfig, cookie: cfg.Cookie}}
}

// State is the runner's session as last seen.
func (r *Runner) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// setState records a session programmed (c) or ended (err), and tells
// OnChange when that changed the state.
func (r *Runner) setState(c *Controller, err error) {
	r.mu.Lock()
	st, changed := r.state, false
	r.cur = c
	if programmed := c != nil; programmed != st.Programmed {
		st.Programmed, st.Since, changed = programmed, time.Now(), true
	}
	if c != nil {
		st.Sessions++
		changed = true
	}
	if (err == nil) != (st.Err == nil) || (err != nil && err.Error() != st.Err.Error()) {
		changed = true
	}
	st.Err = err
	r.state = st
	r.mu.Unlock()
	if changed && r.cfg.OnChange != nil {
		r.cfg.OnChange(st)
	}
}

// Run serves sessions until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := r.session(ctx)
		if ctx.Err() != nil {
			r.setState(nil, ctx.Err())
			return
		}
		r.setState(nil, err)
		r.log.Warn("switch session ended; dialing again", "err", err, "after", r.cfg.Retry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.cfg.Retry):
		}
	}
}

// session runs one session to its end.
func (r *Runner) session(ctx context.Context) error {
	s, err := r.cfg.Dial(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := r.push(ctx, s); err != nil {
		return err
	}
	defer r.forget(s)
	c, err := New(ctx, s, r.cfg.Controller)
	if err != nil {
		return err
	}
	r.setState(c, nil)
	r.programmedOnce.Do(func() { close(r.programmed) })
	r.log.Info("switch programmed", "program", "cache_switch")
	if err := c.Run(ctx, r.cfg.Interval, s.Done()); err != nil {
		return err
	}
	if err := s.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// Renew applies map p, read at readAt, to the switch of the current
// session and renews its lease (Controller.Renew); ErrNoSession without
// one.
func (r *Runner) Renew(ctx context.Context, p *partmap.Placement, readAt time.Time) error {
	r.mu.Lock()
	c, last := r.cur, r.state.Err
	r.mu.Unlock()
	if c == nil {
		return fmt.Errorf("cannot renew %s: %w (last: %w)", r.cfg.Controller.Member, ErrNoSession, last)
	}
	return c.Renew(ctx, p, readAt)
}

// Programmed is closed once a session has programmed the switch.
func (r *Runner) Programmed() <-chan struct{} { return r.programmed }

// Controller is the current session's controller, or nil.
func (r *Runner) Controller() *Controller {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}
