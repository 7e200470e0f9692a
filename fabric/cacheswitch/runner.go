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

// Errors of a runner without a controller at work.
var (
	// ErrNoSession says the switch has no live session (it is
	// unreachable): its lease is not renewed.
	ErrNoSession = errors.New("no session with the switch")
	// ErrBackup says the session is a backup: another controller is the
	// switch's primary, or none is and this one is claiming it. Its lease
	// is the primary's to renew.
	ErrBackup = errors.New("backup session: another controller is the switch's primary")
)

// Session is a driver's session with a switch (stratum.Conn).
type Session interface {
	Device
	SetPipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error
	Done() <-chan struct{}
	Err() error
	Close() error
}

// Arbiter is a session that may be a backup while another controller is
// the switch's primary, and that claims mastership (stratum.Conn). A
// session that is no Arbiter is primary from its start.
type Arbiter interface {
	// Primary says whether the session is primary and whether any
	// controller is, and returns a channel closed when that may change.
	Primary() (primary, anyPrimary bool, changed <-chan struct{})
	// Claim asks for mastership with an election id step above the
	// highest the switch has seen.
	Claim(ctx context.Context, step uint64) error
}

// PipelineReader is a session that tells which pipeline the switch runs
// (stratum.Conn). A switch behind a session that is none is given the
// pipeline at every session.
type PipelineReader interface {
	PipelineCookie(ctx context.Context) (cookie uint64, ok bool, err error)
}

// Claim steps: a leader's claim is above any other controller's made from
// the same arbitration update.
const (
	backupStep = 1
	leaderStep = 2
)

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
	// Leader starts the runner as its fleet's leader (SetLeader).
	Leader bool
	// AlwaysPush pushes the pipeline whenever the runner becomes primary,
	// even to a switch that runs it: the switch starts empty every time,
	// as before takeovers existed (benchmarks compare the two).
	AlwaysPush bool
	// OnChange, when set, is called with the runner's state whenever it
	// changes: a session programmed the switch, or it ended or could not
	// start for another reason than the last time.
	OnChange func(State)
	Logger   *slog.Logger
}

// State is a runner's session as last seen.
type State struct {
	// Programmed says a session is up, primary, and runs the switch
	// with the pipeline it pushed or found.
	Programmed bool
	// Since is when Programmed last changed (the runner's creation until
	// it first does).
	Since time.Time
	// Err is why the last session ended or could not start, or ErrBackup
	// while the session is a backup; nil while programmed.
	Err error
	// Claiming says the session is a backup that has claimed mastership
	// and waits for the switch's answer.
	Claiming bool
	// Sessions counts the times the runner became primary and programmed
	// the switch: Pushes of them pushed the pipeline (the switch started
	// empty), the others took over a switch that ran it and kept its
	// cache.
	Sessions, Pushes int
	// Pushed says the last of them pushed the pipeline.
	Pushed bool
}

// Runner keeps one switch programmed across sessions: it dials, waits as
// a backup while another controller is primary, claims mastership when
// none is (and, as its fleet's leader, when it starts a session or
// becomes the leader), and once primary either takes the switch over
// with its cache — when it runs this pipeline (PipelineCookie) — or
// pushes the pipeline, which empties it; it then runs a Controller until
// it loses mastership (and waits again) or the session ends (and dials
// again).
type Runner struct {
	cfg RunnerConfig
	log *slog.Logger

	mu    sync.Mutex // guards cur, state
	cur   *Controller
	state State
	build build // the compiled program pushed, and what the session runs (upgrade.go)
	lead  *Leadership

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
		state: State{Since: time.Now()}, lead: NewLeadership(cfg.Leader),
		build: build{deviceConfig: cfg.DeviceConfig, cookie: cfg.Cookie}}
}

// SetLeader makes the runner its fleet's leader or not. A leader claims
// mastership of the switch at once if it is not primary, and when no
// controller is, its claim is above those of the others.
func (r *Runner) SetLeader(leader bool) { r.lead.SetLeader(leader) }

// State is the runner's session as last seen.
func (r *Runner) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// setState records a session that programmed the switch (c; pushed when
// it pushed the pipeline) or one without a controller at work (err), and
// tells OnChange when that changed the state.
func (r *Runner) setState(c *Controller, pushed, claiming bool, err error) {
	r.mu.Lock()
	st, changed := r.state, false
	r.cur = c
	if programmed := c != nil; programmed != st.Programmed {
		st.Programmed, st.Since, changed = programmed, time.Now(), true
	}
	if c != nil {
		st.Sessions, st.Pushed = st.Sessions+1, pushed
		changed = true
	}
	if pushed {
		st.Pushes++
	}
	if (err == nil) != (st.Err == nil) || (err != nil && err.Error() != st.Err.Error()) || claiming != st.Claiming {
		changed = true
	}
	st.Err, st.Claiming = err, claiming
	r.state = st
	r.mu.Unlock()
	if changed && r.cfg.OnChange != nil {
		r.cfg.OnChange(st)
	}
}

// Run serves sessions until ctx ends.
func (r *Runner) Run(ctx context.Context) {
	Redialer{
		Device: "switch", Retry: r.cfg.Retry, Logger: r.log,
		Session: r.session,
		Ended: func(err error) {
			if ctx.Err() != nil {
				err = ctx.Err() // stopped, whatever the session's last call said
			}
			r.setState(nil, false, false, err)
		},
	}.Run(ctx)
}

// session runs one session to its end: primary or backup, as often as
// mastership changes hands.
func (r *Runner) session(ctx context.Context) error {
	s, err := r.cfg.Dial(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	defer r.forget(s)
	arb, _ := s.(Arbiter)
	first := true
	for {
		if arb != nil {
			if err := r.awaitPrimary(ctx, s, arb, first); err != nil {
				return err
			}
		}
		first = false
		c, pushed, err := r.program(ctx, s)
		if err != nil {
			if lost(arb) {
				r.log.Info("mastership lost while programming the switch", "err", err)
				continue
			}
			return err
		}
		r.setState(c, pushed, false, nil)
		r.programmedOnce.Do(func() { close(r.programmed) })
		r.log.Info("switch programmed", "program", "cache_switch", "pipeline_pushed", pushed, "keys_kept", c.Keys())
		if err := r.serve(ctx, s, arb, c); err != nil || !lost(arb) {
			return err
		}
		r.forget(s)
		r.log.Info("mastership lost to another controller: waiting as a backup")
	}
}

// lost says the session is a backup.
func lost(arb Arbiter) bool {
	if arb == nil {
		return false
	}
	primary, _, _ := arb.Primary()
	return !primary
}

// awaitPrimary waits until the session is primary. It claims mastership
// when no controller is primary, when the runner becomes the leader, and
// as the leader at the session's start (first).
func (r *Runner) awaitPrimary(ctx context.Context, s Session, arb Arbiter, first bool) error {
	for {
		primary, anyPrimary, changed := arb.Primary()
		if primary {
			return nil
		}
		leader, promoted := r.lead.Leading()
		claim := !anyPrimary || (leader && first)
		first = false
		if claim {
			step := uint64(backupStep)
			if leader {
				step = leaderStep
			}
			if err := arb.Claim(ctx, step); err != nil {
				return err
			}
		}
		why := fmt.Errorf("%w", ErrBackup)
		if !anyPrimary {
			why = fmt.Errorf("no controller is the switch's primary; claiming it: %w", ErrBackup)
		}
		r.setState(nil, false, claim, why)
		select {
		case <-changed:
		case <-promoted:
			first = true // claim as the new leader
		case <-s.Done():
			return s.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// program makes the switch run this runner's pipeline: it takes over a
// switch that runs it already with its state (Resume), and pushes the
// pipeline to any other (New). pushed says it pushed.
func (r *Runner) program(ctx context.Context, s Session) (c *Controller, pushed bool, err error) {
	if pr, ok := s.(PipelineReader); ok && !r.cfg.AlwaysPush {
		running, ok, err := pr.PipelineCookie(ctx)
		if err != nil {
			return nil, false, err
		}
		if ok && r.adopt(s, running) {
			c, err := Resume(ctx, s, r.cfg.Controller)
			if err != nil {
				r.forget(s)
			}
			return c, false, err
		}
	}
	if err := r.push(ctx, s); err != nil {
		return nil, false, err
	}
	c, err = New(ctx, s, r.cfg.Controller)
	return c, true, err
}

// serve runs c until ctx ends, the session ends or it loses mastership.
func (r *Runner) serve(ctx context.Context, s Session, arb Arbiter, c *Controller) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if arb != nil {
		go func() {
			for {
				primary, _, changed := arb.Primary()
				if !primary {
					cancel()
					return
				}
				select {
				case <-changed:
				case <-rctx.Done():
					return
				}
			}
		}()
	}
	err := c.Run(rctx, r.cfg.Interval, s.Done())
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case lost(arb):
		return nil
	case err != nil:
		return err
	}
	return s.Err()
}

// Renew applies map p, read at readAt, to the switch of the current
// session and renews its lease (Controller.Renew); ErrBackup while the
// session is a backup, ErrNoSession without one.
func (r *Runner) Renew(ctx context.Context, p *partmap.Placement, readAt time.Time) error {
	r.mu.Lock()
	c, last := r.cur, r.state.Err
	r.mu.Unlock()
	if c == nil {
		if errors.Is(last, ErrBackup) {
			return fmt.Errorf("cannot renew %s: %w", r.cfg.Controller.Member, last)
		}
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
