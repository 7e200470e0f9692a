package onos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Errors of a Session.
var (
	// ErrNotInREST: ONOS's REST API has no resource for the operation
	// (register writes and reads, counters, digests, packet-outs); only a
	// pipeconf application of ONOS, or a P4Runtime session of the
	// driver's own, could do it.
	ErrNotInREST = errors.New("ONOS's REST API has no resource for it")
	// ErrDeviceUnavailable: ONOS lost its connection to the switch.
	ErrDeviceUnavailable = errors.New("ONOS reports the device unavailable")
	// ErrNoPipeline: Write or Read before SetPipeline.
	ErrNoPipeline = errors.New("no pipeline set")
	// ErrNoEntry: a table entry to delete that ONOS does not hold.
	ErrNoEntry = errors.New("no such table entry")
)

// DefaultPollInterval is how often a session asks ONOS for its device's
// state.
const DefaultPollInterval = time.Second

// SessionConfig configures a session.
type SessionConfig struct {
	Switch Switch
	// PollInterval is how often the device's state is read, while waiting
	// for it in SetPipeline and afterwards to end the session when it
	// becomes unavailable (DefaultPollInterval).
	PollInterval time.Duration
}

// Session programs one switch through ONOS; it satisfies
// cacheswitch.Session. Table entries become flow rules of the client's
// application on the device; what ONOS's REST API cannot do fails with
// ErrNotInREST. The session ends (Done) when ONOS reports the device
// unavailable, ONOS stops answering, or on Close.
type Session struct {
	c   *Client
	cfg SessionConfig
	log *slog.Logger

	mu    sync.Mutex // guards tr, flows, watching
	tr    *translator
	flows map[string]string // matchKey -> ONOS flow id, of the flows this session added or read
	watch bool

	never     chan []byte // packet-ins: ONOS's REST API forwards none
	digests   chan *p4v1.DigestList
	done      chan struct{}
	closeOnce sync.Once
	err       error // why the session ended; set before done closes
}

// Dial opens a session with a switch behind ONOS: it checks that ONOS
// answers for the device (which it may not know yet: SetPipeline
// configures it).
func (c *Client) Dial(ctx context.Context, cfg SessionConfig) (*Session, error) {
	if _, err := cfg.Switch.config(); err != nil {
		return nil, fmt.Errorf("cannot open a session through ONOS: %w", err)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if _, err := c.Device(ctx, cfg.Switch.DeviceID); err != nil && !errors.Is(err, ErrUnknownDevice) {
		return nil, fmt.Errorf("cannot open a session with %s through ONOS: %w", cfg.Switch.DeviceID, err)
	}
	return &Session{c: c, cfg: cfg, log: c.log.With("device", cfg.Switch.DeviceID), flows: map[string]string{},
		never: make(chan []byte), digests: make(chan *p4v1.DigestList), done: make(chan struct{})}, nil
}

// SetPipeline configures the device in ONOS with its pipeconf, waits
// until ONOS reports it available (connected, the pipeconf's pipeline
// pushed) and removes the flow rules the client's application holds on
// it, so the switch's tables start empty. info must be the P4Info of the
// pipeconf's program: it names the tables and actions of the entries
// written later. ONOS pushes the pipeconf's own compiled program, so
// deviceConfig and cookie are not sent (a non-empty deviceConfig is
// logged as unused).
func (s *Session) SetPipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	if info == nil {
		return fmt.Errorf("cannot set the pipeline of %s: no P4Info", s.cfg.Switch.DeviceID)
	}
	if len(deviceConfig) > 0 {
		s.log.Info("device config not sent: ONOS pushes the pipeconf's program", "bytes", len(deviceConfig), "cookie", cookie)
	}
	if err := s.c.ConfigureDevices(ctx, s.cfg.Switch); err != nil {
		return fmt.Errorf("cannot set the pipeline of %s: %w", s.cfg.Switch.DeviceID, err)
	}
	if err := s.awaitAvailable(ctx); err != nil {
		return fmt.Errorf("cannot set the pipeline of %s: %w", s.cfg.Switch.DeviceID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tr = newTranslator(info)
	if err := s.readFlows(ctx); err != nil {
		return fmt.Errorf("cannot empty the tables of %s: %w", s.cfg.Switch.DeviceID, err)
	}
	refs := make([]FlowRef, 0, len(s.flows))
	for _, id := range s.flows {
		refs = append(refs, FlowRef{DeviceID: s.cfg.Switch.DeviceID, FlowID: id})
	}
	if err := s.c.RemoveFlows(ctx, refs); err != nil {
		return fmt.Errorf("cannot empty the tables of %s: %w", s.cfg.Switch.DeviceID, err)
	}
	s.flows = map[string]string{}
	if !s.watch {
		s.watch = true
		go s.watchDevice()
	}
	s.log.Info("pipeline set", "pipeconf", s.cfg.Switch.Pipeconf, "removed_flows", len(refs))
	return nil
}

// awaitAvailable polls the device until ONOS reports it available.
func (s *Session) awaitAvailable(ctx context.Context) error {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		d, err := s.c.Device(ctx, s.cfg.Switch.DeviceID)
		switch {
		case err == nil && d.Available:
			s.log.Info("device available", "role", d.Role, "driver", d.Driver)
			return nil
		case err != nil && !errors.Is(err, ErrUnknownDevice):
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cannot see %s available: %w", s.cfg.Switch.DeviceID, ctx.Err())
		case <-s.done:
			return fmt.Errorf("cannot see %s available: session closed", s.cfg.Switch.DeviceID)
		case <-t.C:
		}
	}
}

// watchDevice ends the session when ONOS reports the device unavailable
// or stops answering.
func (s *Session) watchDevice() {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.PollInterval+10*time.Second)
		d, err := s.c.Device(ctx, s.cfg.Switch.DeviceID)
		cancel()
		switch {
		case err != nil:
			s.end(fmt.Errorf("cannot watch %s: %w", s.cfg.Switch.DeviceID, err))
		case !d.Available:
			s.end(fmt.Errorf("session with %s ended: %w", s.cfg.Switch.DeviceID, ErrDeviceUnavailable))
		}
	}
}

func (s *Session) end(err error) {
	s.closeOnce.Do(func() {
		s.err = err
		close(s.done)
		if err != nil {
			s.log.Warn("session ended", "err", err)
		}
	})
}

// Done is closed when the session ends.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err says why the session ended (nil after Close, or while it runs).
func (s *Session) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Close ends the session; the switch's flow rules stay in ONOS.
func (s *Session) Close() error {
	s.end(nil)
	return nil
}

// PacketOut fails: ONOS's REST API sends no packets.
func (s *Session) PacketOut(payload []byte) error {
	return fmt.Errorf("cannot send a packet-out of %d bytes to %s through ONOS's REST API: %w", len(payload), s.cfg.Switch.DeviceID, ErrNotInREST)
}

// PacketIns never delivers: ONOS's REST API forwards no packet-ins.
func (s *Session) PacketIns() <-chan []byte { return s.never }

// Digests never delivers: ONOS's REST API forwards no digests.
func (s *Session) Digests() <-chan *p4v1.DigestList { return s.digests }
