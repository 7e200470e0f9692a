package cacheswitch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

// ErrP4InfoChanged says an upgrade carried another P4Info than the one
// the runner programs: it is refused, not pushed.
var ErrP4InfoChanged = errors.New("the P4Info differs from the one the switch is programmed with")

// PipelineReconciler is a session that can replace the switch's compiled
// program in place (P4Runtime's RECONCILE_AND_COMMIT), keeping its table
// entries and registers (stratum.Conn).
type PipelineReconciler interface {
	ReconcilePipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error
}

// build is the compiled program a runner pushes at every new session,
// and the one its current session runs. Its lock serialises the pushes:
// a session's first push and the upgrades.
type build struct {
	mu           sync.Mutex
	deviceConfig []byte
	cookie       uint64
	session      Session // the session whose switch got a push; nil between sessions
	running      uint64  // the cookie session's switch runs
}

// push gives the switch of the new session s the runner's build
// (VERIFY_AND_COMMIT): it starts over with empty tables and zero
// registers.
func (r *Runner) push(ctx context.Context, s Session) error {
	b := &r.build
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.SetPipeline(ctx, r.cfg.Controller.Info, b.deviceConfig, b.cookie); err != nil {
		return err
	}
	b.session, b.running = s, b.cookie
	return nil
}

// adopt records that the switch of session s runs the build of cookie
// running, when that is the runner's build: the session takes the switch
// over with its state instead of pushing.
func (r *Runner) adopt(s Session, running uint64) bool {
	b := &r.build
	b.mu.Lock()
	defer b.mu.Unlock()
	if running != b.cookie {
		return false
	}
	b.session, b.running = s, running
	return true
}

// forget records that session s ended or lost mastership.
func (r *Runner) forget(s Session) {
	b := &r.build
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.session == s {
		b.session, b.running = nil, 0
	}
}

// RunningCookie is the cookie of the build the current session's switch
// runs; 0 without a session.
func (r *Runner) RunningCookie() uint64 {
	b := &r.build
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running
}

// Upgrade replaces the runner's compiled program with deviceConfig, named
// cookie, for the same P4Info: the current session's switch gets it with
// RECONCILE_AND_COMMIT, keeping its entries, registers and cached keys,
// and every later session pushes it. Another P4Info is refused
// (ErrP4InfoChanged) and nothing is pushed. When the switch refuses the
// upgrade it keeps running the build it had, and a later call tries again.
func (r *Runner) Upgrade(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	member := r.cfg.Controller.Member
	if !proto.Equal(info, r.cfg.Controller.Info) {
		return fmt.Errorf("cannot upgrade the pipeline of %s: %w", member, ErrP4InfoChanged)
	}
	b := &r.build
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deviceConfig, b.cookie = deviceConfig, cookie
	if b.session == nil || b.running == cookie {
		return nil // the next session pushes it
	}
	rc, ok := b.session.(PipelineReconciler)
	if !ok {
		return fmt.Errorf("cannot upgrade the pipeline of %s in its session: the driver's sessions (%T) cannot reconcile a pipeline; the next session pushes it", member, b.session)
	}
	if err := rc.ReconcilePipeline(ctx, info, deviceConfig, cookie); err != nil {
		return fmt.Errorf("cannot upgrade the pipeline of %s in its session (it runs cookie %#016x): %w", member, b.running, err)
	}
	r.log.Info("switch pipeline upgraded in its session", "from_cookie", fmt.Sprintf("%#016x", b.running), "cookie", fmt.Sprintf("%#016x", cookie),
		"device_config_bytes", len(deviceConfig))
	b.running = cookie
	return nil
}
