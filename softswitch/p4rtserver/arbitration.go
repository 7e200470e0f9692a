package p4rtserver

import (
	"fmt"
	"math/big"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// stream is one controller's StreamChannel.
type stream struct {
	srv      p4v1.P4Runtime_StreamChannelServer
	election *big.Int // nil until its first arbitration
	out      chan *p4v1.StreamMessageResponse
}

// electionID is the 128-bit election id as a number (0 when unset).
func electionID(u *p4v1.Uint128) *big.Int {
	v := new(big.Int).SetUint64(u.GetHigh())
	v.Lsh(v, 64)
	return v.Or(v, new(big.Int).SetUint64(u.GetLow()))
}

func toUint128(v *big.Int) *p4v1.Uint128 {
	lo := new(big.Int).And(v, new(big.Int).SetUint64(^uint64(0)))
	hi := new(big.Int).Rsh(v, 64)
	return &p4v1.Uint128{High: hi.Uint64(), Low: lo.Uint64()}
}

// arbitrate handles an arbitration message of st: it checks the device
// and role, records the election id and, when the primary changed, tells
// every stream who is primary. The caller holds s.mu.
func (s *Server) arbitrate(st *stream, a *p4v1.MasterArbitrationUpdate) error {
	if a.DeviceId != s.cfg.DeviceID {
		return status.Errorf(codes.NotFound, "no device %d (this switch is device %d)", a.DeviceId, s.cfg.DeviceID)
	}
	if a.GetRole().GetName() != "" {
		return status.Errorf(codes.Unimplemented, "role %q: the software switch has only the default role", a.GetRole().GetName())
	}
	id := electionID(a.ElectionId)
	if a.ElectionId == nil || id.Sign() == 0 {
		return status.Error(codes.InvalidArgument, "an election id of 0 or none cannot become primary; the software switch does not serve such backup-only clients")
	}
	for other := range s.streams {
		if other != st && other.election != nil && other.election.Cmp(id) == 0 {
			return status.Errorf(codes.InvalidArgument, "election id %s is another controller's", id)
		}
	}
	before := s.primary
	st.election = id
	s.primary = s.highest()
	if before != s.primary || before == st {
		s.announce()
	} else {
		s.send(st, s.arbitrationFor(st))
	}
	return nil
}

// highest is the stream with the highest election id, or nil.
func (s *Server) highest() *stream {
	var best *stream
	for st := range s.streams {
		if st.election != nil && (best == nil || st.election.Cmp(best.election) > 0) {
			best = st
		}
	}
	return best
}

// announce sends every arbitrated stream its arbitration update.
func (s *Server) announce() {
	for st := range s.streams {
		if st.election != nil {
			s.send(st, s.arbitrationFor(st))
		}
	}
	if s.primary != nil {
		s.log.Info("P4Runtime primary elected", "election_id", s.primary.election.String())
	}
}

// arbitrationFor is st's update: OK for the primary, ALREADY_EXISTS for
// a backup, both with the primary's election id.
func (s *Server) arbitrationFor(st *stream) *p4v1.StreamMessageResponse {
	a := &p4v1.MasterArbitrationUpdate{DeviceId: s.cfg.DeviceID, Status: &rpcstatus.Status{Code: int32(codes.OK)}}
	switch {
	case s.primary == nil:
		a.Status = &rpcstatus.Status{Code: int32(codes.NotFound), Message: "no primary"}
	case st != s.primary:
		a.Status = &rpcstatus.Status{Code: int32(codes.AlreadyExists), Message: "a controller with a higher election id is primary"}
		a.ElectionId = toUint128(s.primary.election)
	default:
		a.ElectionId = toUint128(st.election)
	}
	return &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: a}}
}

// send queues m on st without blocking; a stream whose controller does
// not read is dropped from the queue's point of view (counted).
func (s *Server) send(st *stream, m *p4v1.StreamMessageResponse) {
	select {
	case st.out <- m:
	default:
		s.stats.streamDrops.Add(1)
	}
}

// checkPrimary checks that a request's device and election id are the
// primary's, as Write and SetForwardingPipelineConfig require.
func (s *Server) checkPrimary(device uint64, role string, election *p4v1.Uint128) error {
	if device != s.cfg.DeviceID {
		return status.Errorf(codes.NotFound, "no device %d (this switch is device %d)", device, s.cfg.DeviceID)
	}
	if role != "" {
		return status.Errorf(codes.Unimplemented, "role %q: the software switch has only the default role", role)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.primary == nil || electionID(election).Cmp(s.primary.election) != 0 {
		return status.Error(codes.PermissionDenied, fmt.Sprintf("election id %s is not the primary's", electionID(election)))
	}
	return nil
}
