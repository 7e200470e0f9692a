// Package p4rtserver serves P4Runtime (v1.5.0, the p4lang Go bindings)
// for the software switch: client arbitration by election id on the
// StreamChannel as the specification has it (one primary per device: the
// controller whose election id is the highest ever seen; backups told
// ALREADY_EXISTS, or NOT_FOUND while there is no primary; none promoted
// when the primary leaves),
// SetForwardingPipelineConfig checked against the P4Info the switch
// runs, Write with P4Runtime's per-update errors, Read of table entries,
// registers and counters, packet-out and packet-in on the stream, and the
// switch's hot-key digests as DigestLists to the primary.
package p4rtserver

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/distcache/distcache/softswitch"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// APIVersion is the P4Runtime version served.
const APIVersion = "1.5.0"

// streamQueue bounds the messages waiting to be sent on one stream.
const streamQueue = 1024

// Target is what the server drives: the software switch.
type Target interface {
	Verify(info *p4configv1.P4Info) error
	SetPipeline(info *p4configv1.P4Info, cookie uint64) error
	Reconcile(info *p4configv1.P4Info, cookie uint64) error
	Pipeline() (*p4configv1.P4Info, uint64, bool)
	Write(updates []*p4v1.Update) []error
	Read(filters []*p4v1.Entity) ([]*p4v1.Entity, error)
	PacketOut(frame []byte) error
	PacketIns() <-chan []byte
	HotKeys() <-chan softswitch.HotKey
}

// Config configures a Server.
type Config struct {
	// DeviceID is the P4Runtime device id the switch answers to (1 when 0).
	DeviceID uint64
	Logger   *slog.Logger
}

// Server is a P4Runtime server for one device.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer
	cfg Config
	log *slog.Logger
	t   Target

	// writes is held for reading by each Write and pipeline push from its
	// primary check to its end, and for writing by an arbitration update:
	// a new primary's requests start after the old one's have ended.
	writes sync.RWMutex
	// mu guards streams, primary, past, saved, deviceConfig and digests.
	mu           sync.Mutex
	streams      map[*stream]struct{}
	primary      *stream
	past         *big.Int                       // the highest election id seen (election_id_past); nil before any
	saved        *p4v1.ForwardingPipelineConfig // VERIFY_AND_SAVE's, for COMMIT
	deviceConfig []byte                         // the committed config's p4_device_config
	digests      map[uint32]bool                // digests the controller asked for (DigestEntry)

	stats  struct{ streamDrops, undelivered atomic.Uint64 }
	listID atomic.Uint64
	done   chan struct{}
}

// New returns a server driving t; Close stops its delivery of packet-ins
// and digests.
func New(t Target, cfg Config) *Server {
	if cfg.DeviceID == 0 {
		cfg.DeviceID = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, t: t, streams: map[*stream]struct{}{}, digests: map[uint32]bool{}, done: make(chan struct{})}
	go s.deliver()
	return s
}

// Register adds the P4Runtime service to g.
func (s *Server) Register(g *grpc.Server) { p4v1.RegisterP4RuntimeServer(g, s) }

// Close stops delivering packet-ins and digests.
func (s *Server) Close() { close(s.done) }

// Undelivered counts packet-ins and digests dropped for want of a primary
// or of room in its stream.
func (s *Server) Undelivered() uint64 { return s.stats.undelivered.Load() + s.stats.streamDrops.Load() }

// StreamChannel serves one controller's stream: arbitration first, then
// packet-outs and digest acknowledgements.
func (s *Server) StreamChannel(srv p4v1.P4Runtime_StreamChannelServer) error {
	st := &stream{srv: srv, out: make(chan *p4v1.StreamMessageResponse, streamQueue)}
	s.mu.Lock()
	s.streams[st] = struct{}{}
	s.mu.Unlock()
	defer s.leave(st)
	sendErr := make(chan error, 1)
	go func() {
		for {
			select {
			case m := <-st.out:
				if err := srv.Send(m); err != nil {
					sendErr <- err
					return
				}
			case <-srv.Context().Done():
				return
			}
		}
	}()
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil // the controller closed the stream or went away
		}
		if err := s.handleStream(st, req); err != nil {
			return err
		}
		select {
		case err := <-sendErr:
			return err
		default:
		}
	}
}

func (s *Server) handleStream(st *stream, req *p4v1.StreamMessageRequest) error {
	if req.GetArbitration() != nil {
		s.writes.Lock()
		defer s.writes.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case req.GetArbitration() != nil:
		return s.arbitrate(st, req.GetArbitration())
	case !st.arbitrated:
		return status.Error(codes.FailedPrecondition, "the stream's first message must be an arbitration update")
	case req.GetPacket() != nil:
		if st != s.primary {
			s.send(st, streamError(codes.PermissionDenied, "only the primary controller sends packet-outs", req.GetPacket()))
			return nil
		}
		if err := s.t.PacketOut(req.GetPacket().Payload); err != nil {
			s.send(st, streamError(codes.InvalidArgument, err.Error(), req.GetPacket()))
		}
	case req.GetDigestAck() != nil:
		// Digests are sent one per list and not held for acknowledgement.
	default:
		s.send(st, streamError(codes.Unimplemented, fmt.Sprintf("stream message %T", req.GetUpdate()), nil))
	}
	return nil
}

func streamError(code codes.Code, msg string, out *p4v1.PacketOut) *p4v1.StreamMessageResponse {
	e := &p4v1.StreamError{CanonicalCode: int32(code), Message: msg}
	if out != nil {
		e.Details = &p4v1.StreamError_PacketOut{PacketOut: &p4v1.PacketOutError{PacketOut: out}}
	}
	return &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: e}}
}

// leave forgets st; when it was the primary, nobody is until a
// controller claims it with an election id at least the highest seen, and
// every controller is told so (P4Runtime 1.5 §5.4).
func (s *Server) leave(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.streams, st)
	if s.primary == st {
		s.primary = nil
		s.announce()
	}
}

// deliver sends the switch's packet-ins and hot-key digests to the
// primary.
func (s *Server) deliver() {
	for {
		select {
		case <-s.done:
			return
		case frame := <-s.t.PacketIns():
			s.toPrimary(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Packet{Packet: &p4v1.PacketIn{
				Payload:  frame,
				Metadata: []*p4v1.PacketMetadata{{MetadataId: 1, Value: []byte{0}}, {MetadataId: 2, Value: []byte{0}}},
			}}})
		case hk := <-s.t.HotKeys():
			s.hotKey(hk)
		}
	}
}

func (s *Server) hotKey(hk softswitch.HotKey) {
	info, _, ok := s.t.Pipeline()
	if !ok || len(info.Digests) == 0 {
		return
	}
	id := info.Digests[0].Preamble.Id
	s.mu.Lock()
	wanted := s.digests[id]
	s.mu.Unlock()
	if !wanted {
		s.stats.undelivered.Add(1)
		return
	}
	var key [32]byte // bit<256>, the key left-aligned
	copy(key[:], hk.Key)
	bits := func(b []byte) *p4v1.P4Data {
		return &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: pipelines.StripZeros(b)}}
	}
	data := &p4v1.P4Data{Data: &p4v1.P4Data_Struct{Struct: &p4v1.P4StructLike{Members: []*p4v1.P4Data{
		bits(hk.Digest[:]),
		bits([]byte{byte(len(hk.Key) >> 8), byte(len(hk.Key))}),
		bits(key[:]),
		bits([]byte{byte(hk.Count >> 8), byte(hk.Count)}),
	}}}}
	s.toPrimary(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Digest{Digest: &p4v1.DigestList{
		DigestId: id, ListId: s.listID.Add(1), Data: []*p4v1.P4Data{data}, Timestamp: time.Now().UnixNano(),
	}}})
}

func (s *Server) toPrimary(m *p4v1.StreamMessageResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.primary == nil {
		s.stats.undelivered.Add(1)
		return
	}
	s.send(s.primary, m)
}

// Capabilities reports the P4Runtime version served.
func (s *Server) Capabilities(context.Context, *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: APIVersion}, nil
}
