package p4rtserver

import (
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// Write applies the primary's updates. When any fails, the RPC fails with
// UNKNOWN and one p4.v1.Error per update in the status details, in order
// (OK for those applied), as P4Runtime specifies.
func (s *Server) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	s.writes.RLock()
	defer s.writes.RUnlock()
	if err := s.checkPrimary(req.DeviceId, req.Role, req.ElectionId); err != nil {
		return nil, err
	}
	if req.Atomicity != p4v1.WriteRequest_CONTINUE_ON_ERROR {
		return nil, status.Errorf(codes.Unimplemented, "atomicity %s: the software switch applies updates one by one (CONTINUE_ON_ERROR)", req.Atomicity)
	}
	errs := s.t.Write(req.Updates)
	failed := 0
	details := make([]protoadapt.MessageV1, len(errs))
	for i, err := range errs {
		if err == nil {
			details[i] = &p4v1.Error{CanonicalCode: int32(codes.OK)}
			s.noteDigest(req.Updates[i])
			continue
		}
		failed++
		st, _ := status.FromError(err)
		details[i] = &p4v1.Error{CanonicalCode: int32(st.Code()), Message: st.Message()}
	}
	if failed == 0 {
		return &p4v1.WriteResponse{}, nil
	}
	st, err := status.New(codes.Unknown, fmt.Sprintf("%d of %d updates failed", failed, len(errs))).WithDetails(details...)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "cannot report the updates' errors: %v", err)
	}
	return nil, st.Err()
}

// noteDigest records which digests the controller configured: the
// switch sends only those.
func (s *Server) noteDigest(u *p4v1.Update) {
	de := u.GetEntity().GetDigestEntry()
	if de == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.digests[de.DigestId] = u.Type != p4v1.Update_DELETE
}

// Read streams the entities the request's filters select; any client
// may read.
func (s *Server) Read(req *p4v1.ReadRequest, srv p4v1.P4Runtime_ReadServer) error {
	if req.DeviceId != s.cfg.DeviceID {
		return status.Errorf(codes.NotFound, "no device %d (this switch is device %d)", req.DeviceId, s.cfg.DeviceID)
	}
	var digests []*p4v1.Entity
	var filters []*p4v1.Entity
	for _, e := range req.Entities {
		if de := e.GetDigestEntry(); de != nil {
			digests = append(digests, s.readDigests(de)...)
			continue
		}
		filters = append(filters, e)
	}
	entities, err := s.t.Read(filters)
	if err != nil {
		return err
	}
	entities = append(entities, digests...)
	const perResponse = 1000
	for len(entities) > 0 {
		n := min(len(entities), perResponse)
		if err := srv.Send(&p4v1.ReadResponse{Entities: entities[:n]}); err != nil {
			return err
		}
		entities = entities[n:]
	}
	return nil
}

func (s *Server) readDigests(de *p4v1.DigestEntry) []*p4v1.Entity {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*p4v1.Entity
	for id, on := range s.digests {
		if on && (de.DigestId == 0 || de.DigestId == id) {
			out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: id, Config: &p4v1.DigestEntry_Config{}}}})
		}
	}
	return out
}

// SetForwardingPipelineConfig checks the primary's pipeline against the
// program the switch runs and installs it (VERIFY_AND_COMMIT), only
// checks it (VERIFY), saves it for a later COMMIT (VERIFY_AND_SAVE), or
// keeps the switch's state — tables, registers, counters and the digests
// configured — when it is the same (RECONCILE_AND_COMMIT). The device
// config of a commit is stored as sent, and GetForwardingPipelineConfig
// returns it: the software switch runs its own code, whatever the bytes.
func (s *Server) SetForwardingPipelineConfig(_ context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	s.writes.RLock()
	defer s.writes.RUnlock()
	if err := s.checkPrimary(req.DeviceId, req.Role, req.ElectionId); err != nil {
		return nil, err
	}
	cfg := req.Config
	switch req.Action {
	case p4v1.SetForwardingPipelineConfigRequest_COMMIT:
		s.mu.Lock()
		cfg, s.saved = s.saved, nil
		s.mu.Unlock()
		if cfg == nil {
			return nil, status.Error(codes.FailedPrecondition, "COMMIT without a saved pipeline (VERIFY_AND_SAVE first)")
		}
	case p4v1.SetForwardingPipelineConfigRequest_UNSPECIFIED:
		return nil, status.Error(codes.InvalidArgument, "the request names no action")
	}
	if cfg.GetP4Info() == nil {
		return nil, status.Error(codes.InvalidArgument, "the config has no P4Info")
	}
	var err error
	kept := false // a RECONCILE_AND_COMMIT of the P4Info the switch runs keeps its state
	switch req.Action {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY:
		err = s.verify(cfg)
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE:
		if err = s.verify(cfg); err == nil {
			s.mu.Lock()
			s.saved = proto.Clone(cfg).(*p4v1.ForwardingPipelineConfig)
			s.mu.Unlock()
		}
	case p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		running, _, ok := s.t.Pipeline()
		kept = ok && proto.Equal(running, cfg.P4Info)
		err = s.t.Reconcile(cfg.P4Info, cfg.GetCookie().GetCookie())
	default: // VERIFY_AND_COMMIT, COMMIT
		err = s.t.SetPipeline(cfg.P4Info, cfg.GetCookie().GetCookie())
	}
	if err != nil {
		return nil, err
	}
	if req.Action != p4v1.SetForwardingPipelineConfigRequest_VERIFY && req.Action != p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE {
		s.mu.Lock()
		s.deviceConfig = append([]byte(nil), cfg.P4DeviceConfig...)
		if !kept { // the digests configured are state a reconcile keeps
			s.digests = map[uint32]bool{}
		}
		s.mu.Unlock()
	}
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// verify checks cfg without installing it.
func (s *Server) verify(cfg *p4v1.ForwardingPipelineConfig) error { return s.t.Verify(cfg.P4Info) }

// GetForwardingPipelineConfig returns what the request's response type
// asks of the installed pipeline.
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	if req.DeviceId != s.cfg.DeviceID {
		return nil, status.Errorf(codes.NotFound, "no device %d (this switch is device %d)", req.DeviceId, s.cfg.DeviceID)
	}
	info, cookie, ok := s.t.Pipeline()
	if !ok {
		return nil, status.Error(codes.FailedPrecondition, "no forwarding pipeline config is set")
	}
	s.mu.Lock()
	device := s.deviceConfig
	s.mu.Unlock()
	cfg := &p4v1.ForwardingPipelineConfig{Cookie: &p4v1.ForwardingPipelineConfig_Cookie{Cookie: cookie}}
	switch req.ResponseType {
	case p4v1.GetForwardingPipelineConfigRequest_ALL:
		cfg.P4Info, cfg.P4DeviceConfig = info, device
	case p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE:
		cfg.P4Info = info
	case p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
		cfg.P4DeviceConfig = device
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: cfg}, nil
}
