// Package fleet keeps the switches of a fabric programmed from a
// partition map source: a cacheswitch.Runner per switch member (a
// clientleaf.Runner per client leaf, which has no serving lease), and a
// renewal worker per switch that applies the latest map read to it (a
// switch's Renew takes a few RPCs; a slow or unreachable switch delays
// only its own renewals, and only the newest read is applied). Build
// makes the fleet of a fabric's switches and Follow feeds it every read
// of the map: `distcache fabric` and the operator's SwitchFabric
// controller both run their switches so.
package fleet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/distcache/distcache/fabric/cacheswitch"
	"github.com/distcache/distcache/fabric/pipeline"
	"github.com/distcache/distcache/fabric/stratum"
	"github.com/distcache/distcache/placement/partmap"
	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// read is a map read: the placement and when the read started.
type read struct {
	p  *partmap.Placement
	at time.Time
}

// Runner keeps one switch programmed across sessions: a
// cacheswitch.Runner for a cache switch, a clientleaf.Runner for a client
// leaf.
type Runner interface {
	Run(ctx context.Context)
	// Renew applies a map read that started at readAt.
	Renew(ctx context.Context, p *partmap.Placement, readAt time.Time) error
	State() cacheswitch.State
	// Programmed is closed once a session has programmed the switch.
	Programmed() <-chan struct{}
	// SetLeader makes the runner its fleet's leader or not.
	SetLeader(leader bool)
}

// Member is one switch of a fleet.
type Member struct {
	Runner Runner
	// GNMI, when set, is the switch's gNMI endpoint: the fleet watches
	// its ports' operational state.
	GNMI string
	// GNMITLS secures the gNMI connection; plaintext when nil.
	GNMITLS *tls.Config
}

// member is one switch: its runner, its pending read and its ports.
type member struct {
	name   string
	runner Runner
	gnmi   string
	tls    *tls.Config
	latest chan read // holds at most the newest read not yet applied

	mu      sync.Mutex // guards lastErr, ports
	lastErr error
	ports   map[string]bool // port name to up, as gNMI last reported
}

// SetLeader makes every runner of the fleet its leader or not
// (cacheswitch.Runner.SetLeader, clientleaf.Runner.SetLeader): the
// leader claims each cache switch's mastership and programs the client
// leaves.
func (f *Fleet) SetLeader(leader bool) {
	for _, m := range f.members {
		m.runner.SetLeader(leader)
	}
}

// Fleet programs a fabric's switches.
type Fleet struct {
	log     *slog.Logger
	members []*member
}

// New returns a fleet of the members, by member name.
func New(members map[string]Member, log *slog.Logger) *Fleet {
	f := &Fleet{log: log}
	for name, m := range members {
		f.members = append(f.members, &member{name: name, runner: m.Runner, gnmi: m.GNMI, tls: m.GNMITLS, latest: make(chan read, 1), ports: map[string]bool{}})
	}
	return f
}

// Renew hands every switch the map read at at; it does not block.
func (f *Fleet) Renew(p *partmap.Placement, at time.Time) {
	for _, m := range f.members {
		select {
		case <-m.latest: // an older read not applied yet: replaced
		default:
		}
		m.latest <- read{p, at}
	}
}

// Run runs every runner and renewal worker until ctx ends.
func (f *Fleet) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, m := range f.members {
		wg.Go(func() { m.runner.Run(ctx) })
		wg.Go(func() { f.renewals(ctx, m) })
		if m.gnmi != "" {
			wg.Go(func() { f.watchPorts(ctx, m) })
		}
	}
	wg.Wait()
}

// portRetry is the wait before subscribing again to a switch's ports.
const portRetry = time.Second

// watchPorts follows the operational state of m's ports over gNMI, and
// subscribes again when the stream breaks (the switch restarted or went
// away: its ports are then unknown until it answers).
func (f *Fleet) watchPorts(ctx context.Context, m *member) {
	for ctx.Err() == nil {
		err := stratum.WatchPorts(ctx, m.gnmi, m.tls, func(p stratum.PortState) {
			m.mu.Lock()
			was, known := m.ports[p.Name]
			m.ports[p.Name] = p.Up
			m.mu.Unlock()
			if known && was != p.Up {
				f.log.Info("switch port changed", "member", m.name, "port", p.Name, "up", p.Up)
			}
		})
		m.mu.Lock()
		clear(m.ports)
		m.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		f.log.Debug("watching the switch's ports again", "member", m.name, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(portRetry):
		}
	}
}

// Ports reports member's ports as gNMI last reported them: how many, and
// how many are up.
func (f *Fleet) Ports(member string) (total, up int) {
	for _, m := range f.members {
		if m.name != member {
			continue
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, u := range m.ports {
			total++
			if u {
				up++
			}
		}
	}
	return total, up
}

func (f *Fleet) renewals(ctx context.Context, m *member) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-m.latest:
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := m.runner.Renew(rctx, r.p, r.at)
			cancel()
			if errors.Is(err, cacheswitch.ErrBackup) {
				err = nil // another controller renews the switch
			}
			m.mu.Lock()
			// Each failure is a new error value: logged when its text
			// changes, not on every read of the map.
			if err != nil && (m.lastErr == nil || err.Error() != m.lastErr.Error()) {
				f.log.Warn("cannot renew the switch", "member", m.name, "err", err)
			}
			m.lastErr = err
			m.mu.Unlock()
		}
	}
}

// Healthy reports the first switch whose last renewal failed.
func (f *Fleet) Healthy() error {
	for _, m := range f.members {
		m.mu.Lock()
		err := m.lastErr
		m.mu.Unlock()
		if err != nil {
			return fmt.Errorf("switch %s: %w", m.name, err)
		}
	}
	return nil
}

// upgrader is a runner whose compiled program can be replaced: a cache
// switch's (cacheswitch.Runner); a client leaf's is not.
type upgrader interface {
	Upgrade(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error
}

// Upgrade hands every cache switch p, a build of the same P4Info as the
// fleet's (cacheswitch.Runner.Upgrade): a switch in session gets it with
// RECONCILE_AND_COMMIT and keeps its state, the others at their next
// session. The error joins those of the switches that did not take it,
// each naming its switch; another P4Info is refused by every switch
// (cacheswitch.ErrP4InfoChanged) and nothing is pushed.
func (f *Fleet) Upgrade(ctx context.Context, p *pipeline.Pipeline) error {
	errs := make([]error, len(f.members))
	var wg sync.WaitGroup
	for i, m := range f.members {
		if u, ok := m.runner.(upgrader); ok {
			wg.Go(func() { errs[i] = u.Upgrade(ctx, p.Info, p.DeviceConfig, p.Cookie) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}
