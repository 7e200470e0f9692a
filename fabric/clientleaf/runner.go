package clientleaf

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/placement/partmap"
)

// Session is a driver's primary session with a client leaf (a
// stratum.Conn).
type Session interface {
	Device
	SetPipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error
	Done() <-chan struct{}
	Err() error
	Close() error
}

// RunnerConfig configures a Runner.
type RunnerConfig struct {
	// Name names the leaf in logs.
	Name string
	// Dial opens a session with the leaf.
	Dial func(ctx context.Context) (Session, error)
	// Controller configures each session's controller: the leaf's
	// address and the client leaf program's P4Info, which the session
	// pushes.
	Controller Config
	// DeviceConfig is the target's compiled program (none for the
	// software switch).
	DeviceConfig []byte
	// Retry is the wait before dialing again after a session ends (1 s
	// when 0).
	Retry time.Duration
	// Leader starts the runner as its fleet's leader (SetLeader).
	Leader bool
	// OnChange, when set, is called with the runner's state whenever it
	// changes, as cacheswitch.RunnerConfig.OnChange.
	OnChange func(cacheswitch.State)
	Logger   *slog.Logger
}

// RunnerStats counts a runner's work since it started.
type RunnerStats struct {
	// Applies counts the map reads applied to the leaf.
	Applies atomic.Uint64
	// Written counts the table entries those applies inserted, modified
	// or deleted.
	Written atomic.Uint64
	// Errors counts the applies that failed.
	Errors atomic.Uint64
}

// Runner keeps one client leaf programmed across sessions, as
// cacheswitch.Runner keeps a cache switch: it dials, pushes the client
// leaf program — so a leaf starts every session with empty tables —,
// applies the newest map it was given, and applies every later map read
// (Renew) until the session ends; then it dials again. A client leaf
// caches nothing, so it holds no serving lease: a leaf cut off from its
// controller goes on routing reads by the tables it has, each to a switch
// that serves only under its own lease.
type Runner struct {
	cfg RunnerConfig
	log *slog.Logger

	mu     sync.Mutex // guards sess, ctl, state, last, cookie
	sess   Session
	ctl    *Controller
	state  cacheswitch.State
	last   *partmap.Placement // the newest map given to Renew
	cookie uint64

	lead *cacheswitch.Leadership // only the fleet's leader programs the leaf

	applyMu sync.Mutex // one Apply at a time, of the newest map
	stats   RunnerStats

	programmed     chan struct{}
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
	if cfg.Controller.Logger == nil {
		cfg.Controller.Logger = cfg.Logger
	}
	return &Runner{cfg: cfg, log: cfg.Logger.With("client_leaf", cfg.Name), programmed: make(chan struct{}),
		state: cacheswitch.State{Since: time.Now()}, lead: cacheswitch.NewLeadership(cfg.Leader)}
}

// SetLeader makes the runner its fleet's leader or not. Only the leader
// dials the leaf: a client leaf has no serving lease to keep, so the
// other replicas hold no session, and a new leader pushes the program
// again (a leaf goes on routing by its tables meanwhile).
func (r *Runner) SetLeader(leader bool) { r.lead.SetLeader(leader) }

// State is the runner's session as last seen.
func (r *Runner) State() cacheswitch.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// Stats are the runner's counters.
func (r *Runner) Stats() *RunnerStats { return &r.stats }

// Programmed is closed once a session has programmed the leaf.
func (r *Runner) Programmed() <-chan struct{} { return r.programmed }

// setSession records a session that programmed the leaf (s, c) or one
// that ended (err), and tells OnChange when the state changed.
func (r *Runner) setSession(s Session, c *Controller, err error) {
	r.mu.Lock()
	st, changed := r.state, false
	r.sess, r.ctl = s, c
	if programmed := s != nil; programmed != st.Programmed {
		st.Programmed, st.Since, changed = programmed, time.Now(), true
	}
	if s != nil {
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

// Run serves sessions until ctx ends; each starts once the runner is
// the leader.
func (r *Runner) Run(ctx context.Context) {
	cacheswitch.Redialer{
		Device: "client leaf", Retry: r.cfg.Retry, Logger: r.log,
		Leadership: r.lead,
		Session:    r.session,
		Ended:      func(err error) { r.setSession(nil, nil, err) },
	}.Run(ctx)
}

// session runs one session to its end.
func (r *Runner) session(ctx context.Context) error {
	c, err := New(r.cfg.Controller)
	if err != nil {
		return err
	}
	s, err := r.cfg.Dial(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	r.mu.Lock()
	r.cookie++
	cookie := uint64(time.Now().UnixNano()) + r.cookie
	r.mu.Unlock()
	if err := s.SetPipeline(ctx, r.cfg.Controller.Info, r.cfg.DeviceConfig, cookie); err != nil {
		return err
	}
	r.setSession(s, c, nil)
	r.programmedOnce.Do(func() { close(r.programmed) })
	r.log.Info("switch programmed", "program", "client_leaf")
	// The leaf starts empty: the newest map read is applied at once,
	// not at the next read.
	if err := r.apply(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("cannot apply the map to the new session", "err", err)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.Done():
	}
	if err := s.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// Renew applies map p to the leaf of the current session (Apply); readAt
// is unused: a client leaf has no lease to renew. ErrNoSession without a
// session.
func (r *Runner) Renew(ctx context.Context, p *partmap.Placement, _ time.Time) error {
	r.mu.Lock()
	r.last = p
	live, last := r.sess != nil, r.state.Err
	r.mu.Unlock()
	if !live {
		return fmt.Errorf("cannot program client leaf %s: %w (last: %w)", r.cfg.Name, cacheswitch.ErrNoSession, last)
	}
	return r.apply(ctx)
}

// apply applies the newest map given to Renew, if any, to the current
// session's leaf. Applies run one at a time, each of the newest map, so
// an older map never follows a newer one onto the leaf.
func (r *Runner) apply(ctx context.Context) error {
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.mu.Lock()
	s, c, p := r.sess, r.ctl, r.last
	r.mu.Unlock()
	if s == nil || p == nil {
		return nil
	}
	ch, err := c.Apply(ctx, s, p)
	r.stats.Written.Add(uint64(ch.Inserted + ch.Modified + ch.Deleted))
	if err != nil {
		r.stats.Errors.Add(1)
		return err
	}
	r.stats.Applies.Add(1)
	return nil
}
