// Package supervisor runs local processes the way a kubelet runs a pod's
// containers: it starts each one with its output in a log file, restarts it
// with exponential backoff when it exits, and stops everything on request.
// A process can also be killed on purpose (SIGKILL, as a crash) and held
// down until it is explicitly restarted, or paused (SIGSTOP, as a process
// that hangs) until it is resumed, which is how failures are injected.
//
// Each child runs in a process group of its own (so a stop also reaches
// anything it forked, such as a Redis AOF rewrite) and, on Linux, is killed
// by the kernel if the supervisor dies without stopping it.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Defaults of Config.
const (
	DefaultInitialBackoff = 200 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	// DefaultStableAfter is how long a process must run before its backoff
	// is reset.
	DefaultStableAfter = 30 * time.Second
)

// ErrUnknown is wrapped when a name matches no process.
var ErrUnknown = errors.New("no such process")

// Spec is a process to run.
type Spec struct {
	// Name identifies the process; it must be unique.
	Name string
	// Path and Args are the command line (Args without the program name).
	Path string
	Args []string
	// Dir is the working directory (created if missing; empty: inherit).
	Dir string
	// LogFile receives stdout and stderr, appended (its directory is
	// created).
	LogFile string
	// Env are environment variables ("KEY=value") set for the process on
	// top of the supervisor's own environment, which it inherits.
	Env []string
	// Join, when set, is called with the process's PID after every start:
	// it puts the process in a CPU group (package cpuquota). A start whose
	// Join fails is killed and counts as failed.
	Join func(pid int) error
}

// State is what a process is doing.
type State string

// States of a process.
const (
	Running State = "Running" // started and not exited
	Backoff State = "Backoff" // exited; waiting before the restart
	Held    State = "Held"    // killed on request; not restarted until Restart
	Paused  State = "Paused"  // stopped (SIGSTOP) on request; running again after Resume
	Stopped State = "Stopped" // stopped with the supervisor
)

// Status is a process's state as last seen.
type Status struct {
	Name     string
	PID      int // 0 when not running
	State    State
	Restarts int       // starts after the first
	Since    time.Time // when State was entered
	LastExit string    // how the last run ended ("" before any)
}

// Config configures a Supervisor.
type Config struct {
	// InitialBackoff and MaxBackoff bound the wait before a restart; it
	// doubles after every exit and resets once a run lasts StableAfter.
	InitialBackoff, MaxBackoff, StableAfter time.Duration
	// Logger receives process lifecycle events (default: discarded).
	Logger *slog.Logger
}

// Supervisor runs processes. It is safe for concurrent use.
type Supervisor struct {
	cfg    Config
	ctx    context.Context // ends when Stop starts
	cancel context.CancelFunc
	wg     sync.WaitGroup // one goroutine per process

	mu    sync.Mutex       // guards procs and order
	procs map[string]*proc // by name
	order []string         // names in start order
}

// New returns a Supervisor with no processes.
func New(cfg Config) *Supervisor {
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = DefaultInitialBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.StableAfter <= 0 {
		cfg.StableAfter = DefaultStableAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Supervisor{cfg: cfg, ctx: ctx, cancel: cancel, procs: map[string]*proc{}}
}

// Start starts spec's process and keeps it running. It fails if the name
// is taken, the supervisor is stopping, or the first start fails (a
// missing program, say); later exits are restarted.
func (s *Supervisor) Start(spec Spec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return fmt.Errorf("cannot start %s: supervisor is stopping", spec.Name)
	}
	if _, ok := s.procs[spec.Name]; ok {
		return fmt.Errorf("cannot start %s: a process of that name exists", spec.Name)
	}
	p := &proc{spec: spec, log: s.cfg.Logger.With("process", spec.Name), wake: make(chan struct{}, 1)}
	if err := p.start(); err != nil {
		return err
	}
	s.procs[spec.Name] = p
	s.order = append(s.order, spec.Name)
	s.wg.Go(func() { s.supervise(p) })
	return nil
}

// Kill kills name's process with SIGKILL and holds it down: it is not
// restarted until Restart. Killing a held process is a no-op.
func (s *Supervisor) Kill(name string) error {
	p, err := s.lookup(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
	if p.cmd != nil {
		_ = p.signal(syscall.SIGKILL)
	} else {
		p.setState(Held)
	}
	p.log.Info("killed on request; held down")
	return nil
}

// Pause stops name's running process with SIGSTOP (its whole process
// group): it keeps its pid, sockets and memory but runs no more until
// Resume. A paused process is neither exited nor restarted; Kill still
// kills it, and Stop continues it so that it can exit. Pausing a paused
// process is a no-op; a process that is not running cannot be paused.
func (s *Supervisor) Pause(name string) error {
	p, err := s.lookup(name)
	if err != nil {
		return err
	}
	if s.ctx.Err() != nil {
		return fmt.Errorf("cannot pause %s: supervisor is stopping", name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		return nil
	}
	if !p.running() {
		return fmt.Errorf("cannot pause %s: not running (%s)", name, p.state)
	}
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("cannot pause %s: %w", name, err)
	}
	p.paused = true
	p.setState(Paused)
	p.log.Info("paused on request (SIGSTOP)", "pid", p.cmd.Process.Pid)
	return nil
}

// Resume continues name's paused process with SIGCONT. Resuming a process
// that is not paused is a no-op.
func (s *Supervisor) Resume(name string) error {
	p, err := s.lookup(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		return nil
	}
	p.paused = false
	if !p.running() {
		return nil // killed meanwhile: its exit is being handled
	}
	if err := p.signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("cannot resume %s: %w", name, err)
	}
	p.setState(Running)
	p.log.Info("resumed on request (SIGCONT)", "pid", p.cmd.Process.Pid)
	return nil
}

// Restart ends a hold: a held process starts again at once, a process
// waiting in backoff restarts now. A running (or paused) process is left
// alone.
func (s *Supervisor) Restart(name string) error {
	p, err := s.lookup(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.held = false
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// Status returns every process's status in start order.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, s.procs[name].status())
	}
	return out
}

// StatusOf returns name's status.
func (s *Supervisor) StatusOf(name string) (Status, error) {
	p, err := s.lookup(name)
	if err != nil {
		return Status{}, err
	}
	return p.status(), nil
}

// Stop stops every process, the last started first: SIGTERM followed by
// SIGCONT (so that a process paused with SIGSTOP handles it), then SIGKILL
// for those still running when ctx ends. The processes named in first are
// stopped before the others, one by one, each waited for until it has
// exited (or ctx ends): a controller that watches the others must not see
// them go. It returns when all have exited.
func (s *Supervisor) Stop(ctx context.Context, first ...string) {
	s.cancel()
	for _, name := range first {
		if p, err := s.lookup(name); err == nil {
			p.stopAndWait(ctx)
		}
	}
	s.mu.Lock()
	procs := make([]*proc, 0, len(s.order))
	for i := len(s.order) - 1; i >= 0; i-- {
		procs = append(procs, s.procs[s.order[i]])
	}
	s.mu.Unlock()
	for _, p := range procs {
		p.terminate()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	for _, p := range procs {
		p.mu.Lock()
		_ = p.signal(syscall.SIGKILL)
		p.mu.Unlock()
	}
	<-done
}

func (s *Supervisor) lookup(name string) (*proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[name]
	if !ok {
		return nil, fmt.Errorf("cannot find process %q: %w", name, ErrUnknown)
	}
	return p, nil
}

// supervise waits for p's runs and restarts it until the supervisor stops.
func (s *Supervisor) supervise(p *proc) {
	backoff := s.cfg.InitialBackoff
	for {
		ran, exit := p.wait()
		stopping := s.ctx.Err() != nil
		p.mu.Lock()
		p.lastExit, p.cmd, p.paused = exit, nil, false
		held := p.held
		switch {
		case stopping:
			p.setState(Stopped)
		case held:
			p.setState(Held)
		default:
			p.setState(Backoff)
		}
		p.mu.Unlock()
		if stopping {
			return
		}
		if ran >= s.cfg.StableAfter {
			backoff = s.cfg.InitialBackoff
		}
		p.log.Warn("process exited", "how", exit, "ran", ran.Round(time.Millisecond), "held", held,
			"last_log_line", lastLine(p.spec.LogFile))
		if !s.waitToRestart(p, held, backoff) {
			return
		}
		if !held {
			backoff = min(2*backoff, s.cfg.MaxBackoff)
		}
		for {
			p.mu.Lock()
			err := p.start()
			p.mu.Unlock()
			if err == nil {
				select { // a Restart that came meanwhile is served by this start
				case <-p.wake:
				default:
				}
				break
			}
			p.log.Error("cannot restart", "err", err)
			if !s.waitToRestart(p, false, backoff) {
				return
			}
			backoff = min(2*backoff, s.cfg.MaxBackoff)
		}
	}
}

// waitToRestart waits for the backoff (or, when held, for Restart) and
// reports whether to restart (false once the supervisor stops). A process
// held meanwhile keeps waiting.
func (s *Supervisor) waitToRestart(p *proc, held bool, backoff time.Duration) bool {
	var timer <-chan time.Time
	if !held {
		t := time.NewTimer(backoff)
		defer t.Stop()
		timer = t.C
	}
	for {
		select {
		case <-s.ctx.Done():
			p.mu.Lock()
			p.setState(Stopped)
			p.mu.Unlock()
			return false
		case <-p.wake:
		case <-timer:
		}
		p.mu.Lock()
		held := p.held
		p.mu.Unlock()
		if !held {
			return true
		}
		timer = nil
	}
}

// proc is one supervised process.
type proc struct {
	spec Spec
	log  *slog.Logger
	wake chan struct{} // Restart's nudge; buffered, one pending at most

	mu       sync.Mutex    // guards the fields below
	cmd      *exec.Cmd     // the running command, nil between runs
	started  time.Time     // when cmd started
	exited   chan struct{} // closed when cmd has been waited for
	waitErr  error         // cmd.Wait's result, set before exited closes
	held     bool          // killed on request, not restarted until Restart
	paused   bool          // stopped with SIGSTOP on request, until Resume
	state    State
	since    time.Time
	restarts int
	runs     int
	lastExit string
}

// start starts a run of p; p.mu is held.
func (p *proc) start() error {
	if p.spec.Dir != "" {
		if err := os.MkdirAll(p.spec.Dir, 0o755); err != nil {
			return fmt.Errorf("cannot start %s: %w", p.spec.Name, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(p.spec.LogFile), 0o755); err != nil {
		return fmt.Errorf("cannot start %s: %w", p.spec.Name, err)
	}
	logf, err := os.OpenFile(p.spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cannot start %s: %w", p.spec.Name, err)
	}
	defer logf.Close() // the child has its own descriptor
	// Not tied to a context: Stop ends processes with SIGTERM first.
	cmd := exec.CommandContext(context.Background(), p.spec.Path, p.spec.Args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = p.spec.Dir, logf, logf
	if len(p.spec.Env) > 0 {
		cmd.Env = append(os.Environ(), p.spec.Env...) // later entries win
	}
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", p.spec.Name, err)
	}
	if p.spec.Join != nil {
		if err := p.spec.Join(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return fmt.Errorf("cannot start %s: %w", p.spec.Name, err)
		}
	}
	if p.runs > 0 {
		p.restarts++
	}
	p.runs++
	p.cmd, p.started, p.exited = cmd, time.Now(), make(chan struct{})
	p.setState(Running)
	exited := p.exited
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	p.log.Info("started", "pid", cmd.Process.Pid, "restarts", p.restarts)
	return nil
}

// wait waits for the current run to end and returns how long it ran and
// how it ended.
func (p *proc) wait() (time.Duration, string) {
	p.mu.Lock()
	exited, started := p.exited, p.started
	p.mu.Unlock()
	<-exited
	p.mu.Lock()
	defer p.mu.Unlock()
	how := "exited 0"
	if p.waitErr != nil {
		how = p.waitErr.Error()
	}
	return time.Since(started), how
}

// running reports whether a run of p is under way and not reaped yet;
// p.mu is held.
func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the running command's process group and nothing
// when no run is under way (running); p.mu is held.
func (p *proc) signal(sig syscall.Signal) error {
	if !p.running() {
		return nil // none, or reaped: the pid may be reused
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// terminate sends p's run SIGTERM, then SIGCONT so that a paused process
// handles it now. It reports whether a run was going and returns the
// channel closed when that run exits.
func (p *proc) terminate() (running bool, exited <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	running, exited = p.running(), p.exited
	_ = p.signal(syscall.SIGTERM)
	_ = p.signal(syscall.SIGCONT)
	p.paused = false
	return running, exited
}

// stopAndWait terminates p's run and waits until it has exited or ctx
// ends.
func (p *proc) stopAndWait(ctx context.Context) {
	running, exited := p.terminate()
	if !running {
		return
	}
	select {
	case <-exited:
	case <-ctx.Done():
	}
}

// setState records a state change; p.mu is held.
func (p *proc) setState(s State) {
	if p.state != s {
		p.state, p.since = s, time.Now()
	}
}

func (p *proc) status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{Name: p.spec.Name, State: p.state, Restarts: p.restarts, Since: p.since, LastExit: p.lastExit}
	if p.cmd != nil && (p.state == Running || p.state == Paused) {
		st.PID = p.cmd.Process.Pid
	}
	return st
}
