// Package stratum is the fabric driver for switches run by a Stratum
// agent — or any P4Runtime target, such as the software switch: one
// P4Runtime session per switch over gRPC (the p4lang Go bindings), which
// pushes the pipeline or reads which one the switch runs, writes and
// reads table entries and registers, sends packet-outs and receives
// packet-ins and digests; and gNMI for the state of the switch's ports.
//
// Mastership follows P4Runtime 1.5 §5: the switch remembers the highest
// election id it has seen, and only a controller that sends one at least
// that high is primary. When the primary's stream ends nobody is primary
// until a controller claims the switch so; the switch tells every
// controller (NOT_FOUND, with the highest id seen). A session opens as a
// backup (Open: no election id), follows the switch's arbitration
// updates (Primary), and becomes primary by claiming (Claim): its
// election id's high 64 bits one or more above the highest seen, its low
// 64 bits the controller's own (Config.ElectionID), which tell
// controllers that claim at once apart. Dial opens and claims at once.
//
// A session ends when the stream breaks (the switch or the connection
// went away); Done then closes and Err says why. Losing mastership does
// not end it: the session stays open as a backup. The caller dials a new
// session after an end; a switch that restarted has lost its pipeline and
// every entry and register, and the caller starts it over.
package stratum

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Errors that end a session.
var (
	// ErrNotPrimary: another controller holds a higher election id.
	ErrNotPrimary = errors.New("another controller is primary")
	// ErrPipelineRejected says the switch refused the pipeline pushed to
	// it (P4Runtime INVALID_ARGUMENT or FAILED_PRECONDITION): its target
	// does not run that program.
	ErrPipelineRejected = errors.New("the switch refused the pipeline")
)

// queueLen bounds the packet-ins and digests not yet taken.
const queueLen = 4096

// Config configures a session with one switch.
type Config struct {
	// Address is the switch's P4Runtime endpoint (host:port).
	Address string
	// DeviceID is the switch's P4Runtime device id.
	DeviceID uint64
	// ElectionID is the low 64 bits of the controller's election id (1
	// when 0): unique among the controllers of a switch. Claim sets the
	// high 64 bits.
	ElectionID uint64
	// TLS, when set, secures the connection; plaintext otherwise.
	TLS *tls.Config
	// Timeout bounds each RPC (10 s when 0).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Conn is a P4Runtime session with one switch, as its primary or as a
// backup.
type Conn struct {
	cfg    Config
	log    *slog.Logger
	cc     *grpc.ClientConn
	rt     p4v1.P4RuntimeClient
	stream p4v1.P4Runtime_StreamChannelClient
	cancel context.CancelFunc

	roleMu   sync.Mutex    // guards election, role, changed
	election *p4v1.Uint128 // sent with writes: the last id claimed (nil before a claim)
	role     role
	changed  chan struct{} // closed when role changes

	packetIns chan []byte
	digests   chan *p4v1.DigestList
	sendMu    sync.Mutex // serialises Send on the stream

	done    chan struct{}
	errOnce sync.Once
	err     error // why the session ended; set before done closes
}

// role is the session's standing as the switch's last arbitration update
// said.
type role struct {
	primary, anyPrimary bool
	highest             *p4v1.Uint128 // the highest election id the switch has seen; nil before any
}

// Open connects to the switch as a backup-only controller (no election
// id) and returns once the switch has answered with its arbitration
// update; the session is a backup until it claims mastership (Claim).
func Open(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.ElectionID == 0 {
		cfg.ElectionID = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	cc, err := grpc.NewClient(cfg.Address, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("cannot dial switch %s: %w", cfg.Address, err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		cfg: cfg, log: cfg.Logger.With("switch", cfg.Address, "device_id", cfg.DeviceID), cc: cc,
		rt: p4v1.NewP4RuntimeClient(cc), cancel: cancel, changed: make(chan struct{}),
		packetIns: make(chan []byte, queueLen), digests: make(chan *p4v1.DigestList, queueLen), done: make(chan struct{}),
	}
	if err := c.open(ctx, sctx); err != nil {
		cancel()
		cc.Close()
		return nil, err
	}
	go c.receive()
	return c, nil
}

// Dial connects to the switch and claims its mastership at once (one
// above the highest election id it has seen): it preempts any primary.
// It fails with ErrNotPrimary when another controller's claim overtook
// it.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	c, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	primary, _, changed := c.Primary()
	if !primary {
		if err := c.Claim(ctx, 1); err != nil {
			c.Close()
			return nil, err
		}
		select {
		case <-changed:
		case <-c.done:
		case <-ctx.Done():
		}
	}
	if primary, _, _ := c.Primary(); !primary {
		err := fmt.Errorf("cannot become primary of %s: %w", cfg.Address, ErrNotPrimary)
		if c.Err() != nil {
			err = c.Err()
		} else if ctx.Err() != nil {
			err = fmt.Errorf("cannot become primary of %s: %w", cfg.Address, ctx.Err())
		}
		c.Close()
		return nil, err
	}
	return c, nil
}

// open opens the stream, sends a backup-only arbitration update and waits
// for the switch's answer.
func (c *Conn) open(ctx, sctx context.Context) error {
	var err error
	if c.stream, err = c.rt.StreamChannel(sctx); err != nil {
		return fmt.Errorf("cannot open the P4Runtime stream of %s: %w", c.cfg.Address, err)
	}
	if err := c.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: c.cfg.DeviceID,
	}}}); err != nil {
		return fmt.Errorf("cannot send arbitration to %s: %w", c.cfg.Address, err)
	}
	got := make(chan error, 1)
	go func() {
		m, err := c.stream.Recv()
		switch {
		case err != nil:
			got <- fmt.Errorf("cannot arbitrate with %s: %w", c.cfg.Address, err)
		case m.GetArbitration() == nil:
			got <- fmt.Errorf("cannot arbitrate with %s: first stream message is %T", c.cfg.Address, m.GetUpdate())
		default:
			c.arbitrated(m.GetArbitration())
			got <- nil
		}
	}()
	select {
	case err := <-got:
		return err
	case <-ctx.Done():
		return fmt.Errorf("cannot arbitrate with %s: %w", c.cfg.Address, ctx.Err())
	}
}

// arbitrated records the switch's arbitration update a.
func (c *Conn) arbitrated(a *p4v1.MasterArbitrationUpdate) {
	code := codes.Code(a.GetStatus().GetCode())
	r := role{primary: code == codes.OK, anyPrimary: code == codes.OK || code == codes.AlreadyExists, highest: a.GetElectionId()}
	c.roleMu.Lock()
	defer c.roleMu.Unlock()
	if r.primary != c.role.primary || r.anyPrimary != c.role.anyPrimary || !sameID(r.highest, c.role.highest) {
		c.log.Debug("arbitration update", "primary", r.primary, "any_primary", r.anyPrimary, "highest", r.highest.String())
	}
	c.role = r
	close(c.changed)
	c.changed = make(chan struct{})
}

func sameID(a, b *p4v1.Uint128) bool {
	return a.GetHigh() == b.GetHigh() && a.GetLow() == b.GetLow() && (a == nil) == (b == nil)
}

// Primary says whether this session is the switch's primary and whether
// any controller is, as the switch's last arbitration update said, and
// returns a channel closed at the next update.
func (c *Conn) Primary() (primary, anyPrimary bool, changed <-chan struct{}) {
	c.roleMu.Lock()
	defer c.roleMu.Unlock()
	return c.role.primary, c.role.anyPrimary, c.changed
}

// Claim asks to become the switch's primary with an election id whose
// high 64 bits are step above those of the highest id the switch has
// seen, and whose low 64 bits are Config.ElectionID: it preempts any
// primary whose id is lower. Primary reports the switch's answer.
func (c *Conn) Claim(ctx context.Context, step uint64) error {
	c.roleMu.Lock()
	id := &p4v1.Uint128{High: c.role.highest.GetHigh() + max(step, 1), Low: c.cfg.ElectionID}
	c.election = id
	c.roleMu.Unlock()
	err := c.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: c.cfg.DeviceID, ElectionId: id,
	}}})
	if err != nil {
		return fmt.Errorf("cannot claim mastership of %s: %w", c.cfg.Address, err)
	}
	c.log.Info("claiming mastership", "election_id", fmt.Sprintf("%d:%d", id.High, id.Low))
	return ctx.Err()
}

// electionID is the id this session writes with.
func (c *Conn) electionID() *p4v1.Uint128 {
	c.roleMu.Lock()
	defer c.roleMu.Unlock()
	return c.election
}

// receive serves the stream until it ends.
func (c *Conn) receive() {
	for {
		m, err := c.stream.Recv()
		if err != nil {
			c.end(fmt.Errorf("P4Runtime stream of %s ended: %w", c.cfg.Address, err))
			return
		}
		switch {
		case m.GetArbitration() != nil:
			c.arbitrated(m.GetArbitration())
		case m.GetPacket() != nil:
			c.queue(c.packetIns, m.GetPacket().Payload)
		case m.GetDigest() != nil:
			d := m.GetDigest()
			c.queueDigest(d)
			_ = c.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_DigestAck{DigestAck: &p4v1.DigestListAck{DigestId: d.DigestId, ListId: d.ListId}}})
		case m.GetError() != nil:
			c.log.Warn("switch reported a stream error", "code", codes.Code(m.GetError().CanonicalCode), "message", m.GetError().Message)
		}
	}
}

func (c *Conn) queue(ch chan []byte, b []byte) {
	select {
	case ch <- b:
	default:
		c.log.Warn("dropping a packet-in: the controller is behind")
	}
}

func (c *Conn) queueDigest(d *p4v1.DigestList) {
	select {
	case c.digests <- d:
	default:
		c.log.Warn("dropping a digest: the controller is behind")
	}
}

func (c *Conn) send(m *p4v1.StreamMessageRequest) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.stream.Send(m)
}

func (c *Conn) end(err error) {
	c.errOnce.Do(func() {
		c.err = err
		close(c.done)
	})
}

// Done is closed when the session ends; Err says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the session ended (nil while it lasts).
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Close ends the session.
func (c *Conn) Close() error {
	c.end(errors.New("session closed"))
	c.cancel()
	return c.cc.Close()
}

// PacketIns are the payloads of the switch's packet-ins.
func (c *Conn) PacketIns() <-chan []byte { return c.packetIns }

// Digests are the switch's digest lists (already acknowledged).
func (c *Conn) Digests() <-chan *p4v1.DigestList { return c.digests }

func (c *Conn) rpcContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.Timeout)
}

// PipelineCookie asks the switch which pipeline it runs
// (GetForwardingPipelineConfig, COOKIE_ONLY): its cookie, and whether it
// runs one with a cookie at all.
func (c *Conn) PipelineCookie(ctx context.Context) (cookie uint64, ok bool, err error) {
	ctx, cancel := c.rpcContext(ctx)
	defer cancel()
	r, err := c.rt.GetForwardingPipelineConfig(ctx, &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId: c.cfg.DeviceID, ResponseType: p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY,
	})
	if code := status.Code(err); code == codes.FailedPrecondition || code == codes.NotFound {
		return 0, false, nil // no pipeline
	}
	if err != nil {
		return 0, false, fmt.Errorf("cannot ask %s for its pipeline: %w", c.cfg.Address, err)
	}
	if r.GetConfig().GetCookie() == nil {
		return 0, false, nil
	}
	return r.GetConfig().GetCookie().GetCookie(), true, nil
}

// SetPipeline pushes info (VERIFY_AND_COMMIT): the switch starts over with
// empty tables and zero registers.
func (c *Conn) SetPipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	return c.setPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT, info, deviceConfig, cookie)
}

// ReconcilePipeline pushes info with a new device config
// (RECONCILE_AND_COMMIT): the switch keeps its table entries and
// registers, as the P4Info is the one it runs.
func (c *Conn) ReconcilePipeline(ctx context.Context, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	return c.setPipeline(ctx, p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT, info, deviceConfig, cookie)
}

func (c *Conn) setPipeline(ctx context.Context, action p4v1.SetForwardingPipelineConfigRequest_Action, info *p4configv1.P4Info, deviceConfig []byte, cookie uint64) error {
	ctx, cancel := c.rpcContext(ctx)
	defer cancel()
	_, err := c.rt.SetForwardingPipelineConfig(ctx, &p4v1.SetForwardingPipelineConfigRequest{
		DeviceId: c.cfg.DeviceID, ElectionId: c.electionID(), Action: action,
		Config: &p4v1.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: deviceConfig, Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}},
	})
	if code := status.Code(err); code == codes.InvalidArgument || code == codes.FailedPrecondition {
		return fmt.Errorf("cannot set the pipeline of %s (%s): %w: %w", c.cfg.Address, action, ErrPipelineRejected, err)
	}
	if err != nil {
		return fmt.Errorf("cannot set the pipeline of %s (%s): %w", c.cfg.Address, action, err)
	}
	return nil
}

// WriteError is a Write that failed for some of its updates.
type WriteError struct {
	Updates []error // per update, nil for those applied
}

// UpdateErrors are the per-update errors, nil for the updates applied.
func (e *WriteError) UpdateErrors() []error { return e.Updates }

func (e *WriteError) Error() string {
	for i, err := range e.Updates {
		if err != nil {
			return fmt.Sprintf("update %d of %d failed: %v", i, len(e.Updates), err)
		}
	}
	return "write failed"
}

// Write sends updates in one WriteRequest; a failure of some of them is a
// *WriteError with P4Runtime's per-update errors.
func (c *Conn) Write(ctx context.Context, updates ...*p4v1.Update) error {
	if len(updates) == 0 {
		return nil
	}
	ctx, cancel := c.rpcContext(ctx)
	defer cancel()
	_, err := c.rt.Write(ctx, &p4v1.WriteRequest{DeviceId: c.cfg.DeviceID, ElectionId: c.electionID(), Updates: updates})
	if err == nil {
		return nil
	}
	st, _ := status.FromError(err)
	if st.Code() != codes.Unknown || len(st.Details()) != len(updates) {
		return fmt.Errorf("cannot write to %s: %w", c.cfg.Address, err)
	}
	we := &WriteError{Updates: make([]error, len(updates))}
	for i, d := range st.Details() {
		if e, ok := d.(*p4v1.Error); ok && codes.Code(e.CanonicalCode) != codes.OK {
			we.Updates[i] = status.Error(codes.Code(e.CanonicalCode), e.Message)
		}
	}
	return fmt.Errorf("cannot write to %s: %w", c.cfg.Address, we)
}

// Read returns the entities the filters select.
func (c *Conn) Read(ctx context.Context, filters ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	ctx, cancel := c.rpcContext(ctx)
	defer cancel()
	rs, err := c.rt.Read(ctx, &p4v1.ReadRequest{DeviceId: c.cfg.DeviceID, Entities: filters})
	if err != nil {
		return nil, fmt.Errorf("cannot read from %s: %w", c.cfg.Address, err)
	}
	var out []*p4v1.Entity
	for {
		r, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read from %s: %w", c.cfg.Address, err)
		}
		out = append(out, r.Entities...)
	}
}

// PacketOut sends payload (an Ethernet frame) through the switch's CPU
// port.
func (c *Conn) PacketOut(payload []byte) error {
	err := c.send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{
		Payload:  payload,
		Metadata: []*p4v1.PacketMetadata{{MetadataId: 1, Value: []byte{0}}, {MetadataId: 2, Value: []byte{0}}},
	}}})
	if err != nil {
		return fmt.Errorf("cannot send a packet-out to %s: %w", c.cfg.Address, err)
	}
	return nil
}
