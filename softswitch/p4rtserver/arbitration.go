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
	srv        p4v1.P4Runtime_StreamChannelServer
	arbitrated bool     // it sent its first arbitration update
	election   *big.Int // nil: a backup-only controller (no election id)
	out        chan *p4v1.StreamMessageResponse
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

// arbitrate handles an arbitration update of st as P4Runtime 1.5 §5
// specifies. The server remembers the highest election id it has seen
// (election_id_past): an update whose id is at least that makes its
// controller primary; any other controller is a backup, and so is one
// without an election id. When the primary's stream ends nobody is
// primary — no backup is promoted — until a controller sends an id at
// least election_id_past. The caller holds s.writes (so that the old
// primary's writes in flight end before a new primary's start) and s.mu.
func (s *Server) arbitrate(st *stream, a *p4v1.MasterArbitrationUpdate) error {
	if a.DeviceId != s.cfg.DeviceID {
		code := codes.NotFound
		if st.arbitrated {
			code = codes.FailedPrecondition
		}
		return status.Errorf(code, "no device %d (this switch is device %d)", a.DeviceId, s.cfg.DeviceID)
	}
	if a.GetRole().GetName() != "" {
		return status.Errorf(codes.Unimplemented, "role %q: the software switch has only the default role", a.GetRole().GetName())
	}
	var id *big.Int
	if a.ElectionId != nil {
		if id = electionID(a.ElectionId); id.Sign() == 0 {
			return status.Error(codes.InvalidArgument, "an election id of 0 cannot be primary; leave it unset for a backup-only controller")
		}
		for other := range s.streams {
			if other != st && other.election != nil && other.election.Cmp(id) == 0 {
				return status.Errorf(codes.InvalidArgument, "election id %s is another controller's", id)
			}
		}
	}
	wasPrimary := s.primary == st
	st.arbitrated, st.election = true, id
	switch {
	case id != nil && (s.past == nil || id.Cmp(s.past) >= 0):
		s.past, s.primary = id, st
		s.announce()
	case wasPrimary: // it downgraded itself: nobody is primary
		s.primary = nil
		s.announce()
	default:
		s.send(st, s.arbitrationFor(st))
	}
	return nil
}

// announce sends every arbitrated stream its arbitration update.
func (s *Server) announce() {
	for st := range s.streams {
		if st.arbitrated {
			s.send(st, s.arbitrationFor(st))
		}
	}
	if s.primary != nil {
		s.log.Info("P4Runtime primary elected", "election_id", s.primary.election.String())
	} else {
		s.log.Info("no P4Runtime primary", "election_id_past", s.past)
	}
}

// arbitrationFor is st's update, with the highest election id seen (none
// before the first primary): OK for the primary, ALREADY_EXISTS for a
// backup while there is a primary, NOT_FOUND for every controller while
// there is none.
func (s *Server) arbitrationFor(st *stream) *p4v1.StreamMessageResponse {
	a := &p4v1.MasterArbitrationUpdate{DeviceId: s.cfg.DeviceID, Status: &rpcstatus.Status{Code: int32(codes.OK), Message: "you are the primary"}}
	if s.past != nil {
		a.ElectionId = toUint128(s.past)
	}
	switch {
	case s.primary == nil:
		a.Status = &rpcstatus.Status{Code: int32(codes.NotFound), Message: "you are a backup and there is no primary"}
	case st != s.primary:
		a.Status = &rpcstatus.Status{Code: int32(codes.AlreadyExists), Message: "you are a backup: a controller with a higher election id is primary"}
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
// primary's, as Write and SetForwardingPipelineConfig require. The caller
// holds s.writes for reading until the request is applied.
func (s *Server) checkPrimary(device uint64, role string, election *p4v1.Uint128) error {
	if device != s.cfg.DeviceID {
		return status.Errorf(codes.NotFound, "no device %d (this switch is device %d)", device, s.cfg.DeviceID)
	}
	if role != "" {
		return status.Errorf(codes.Unimplemented, "role %q: the software switch has only the default role", role)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.primary == nil || election == nil || electionID(election).Cmp(s.primary.election) != 0 {
		return status.Error(codes.PermissionDenied, fmt.Sprintf("election id %s is not the primary's", electionID(election)))
	}
	return nil
}
