package cachenode

import (
	"bytes"
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// stubShim stands in for the real storage shim, which lives in
// dataplane/shim and is tested end to end elsewhere (with a real Redis).
// It answers GET and FETCH from an in-memory map with ValueVersion set to a
// counter the test controls, and can hold the requests of chosen ops: a held
// request is delivered on held and answered only when the test releases it.
// Retransmissions of a request (same source and sequence number) are not
// counted again: they are ignored while the request is held and get the same
// reply afterwards. Its GET replies carry FlagTracked, as the real shim's do
// for the key's Active owner when no write is in progress, unless
// untracked.
type stubShim struct {
	t  testing.TB
	ep *transport.Endpoint
	// held receives every new request of a held op.
	held chan *heldRequest

	mu        sync.Mutex // guards everything below
	untracked bool       // GET replies without FlagTracked
	values    map[string][]byte
	counter   uint64 // ValueVersion of every reply (C in FETCH replies)
	epoch     uint64 // the epoch FETCH replies carry (FlagEpoch), 0: none
	hold      map[wire.Op]bool
	requests  map[wire.Op]int // distinct requests received, by op
	pending   map[requestID]bool
	replied   map[requestID]*wire.Message
}

type requestID struct {
	src netip.AddrPort
	op  wire.Op
	seq uint64
}

// heldRequest is a request the stub holds until the test answers it.
type heldRequest struct {
	s   *stubShim
	src netip.AddrPort
	req wire.Message // owns its key
}

type stubOption func(*stubShim)

// withValue stores value under key.
func withValue(key, value string) stubOption {
	return func(s *stubShim) { s.values[key] = []byte(value) }
}

// untracked leaves FlagTracked off GET replies: the shim does not promise
// to invalidate the node for the key.
func untracked() stubOption { return func(s *stubShim) { s.untracked = true } }

// withCounter sets the version counter.
func withCounter(c uint64) stubOption { return func(s *stubShim) { s.counter = c } }

// holding holds every request of ops.
func holding(ops ...wire.Op) stubOption {
	return func(s *stubShim) {
		for _, op := range ops {
			s.hold[op] = true
		}
	}
}

func newStubShim(t testing.TB, opts ...stubOption) *stubShim {
	t.Helper()
	ep, err := transport.Listen(transport.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s := &stubShim{
		t: t, ep: ep, held: make(chan *heldRequest, 1024),
		values: map[string][]byte{}, hold: map[wire.Op]bool{}, requests: map[wire.Op]int{},
		pending: map[requestID]bool{}, replied: map[requestID]*wire.Message{},
	}
	for _, o := range opts {
		o(s)
	}
	ep.Start(s.handle)
	t.Cleanup(func() { _ = ep.Close() })
	return s
}

func (s *stubShim) addr() netip.AddrPort { return s.ep.Addr() }

func (s *stubShim) handle(_ transport.Sender, src netip.AddrPort, req *wire.Message) {
	id := requestID{src, req.Op, req.Seq}
	s.mu.Lock()
	if r := s.replied[id]; r != nil {
		s.mu.Unlock()
		_ = s.ep.Send(src, r)
		return
	}
	if s.pending[id] {
		s.mu.Unlock()
		return
	}
	s.requests[req.Op]++
	if s.hold[req.Op] {
		s.pending[id] = true
		s.mu.Unlock()
		h := &heldRequest{s: s, src: src, req: wire.Message{Header: req.Header, Key: bytes.Clone(req.Key)}}
		select {
		case s.held <- h:
		default:
			s.t.Error("stub shim: too many held requests")
		}
		return
	}
	s.mu.Unlock()
	s.answerFromMap(src, &wire.Message{Header: req.Header, Key: bytes.Clone(req.Key)})
}

// answerFromMap answers req with the stored value and the current counter.
func (s *stubShim) answerFromMap(src netip.AddrPort, req *wire.Message) {
	s.mu.Lock()
	v, ok := s.values[string(req.Key)]
	c := s.counter
	s.mu.Unlock()
	status := wire.StatusOK
	if !ok {
		status = wire.StatusNotFound
	}
	s.answer(src, req, status, c, v)
}

// answer sends req's reply and remembers it for retransmissions.
func (s *stubShim) answer(src netip.AddrPort, req *wire.Message, status wire.Status, version uint64, value []byte) {
	if req.Op != wire.OpGet && req.Op != wire.OpFetch {
		status, value = wire.StatusNotOwner, nil
	}
	r := &wire.Message{
		Header: wire.Header{Op: req.Op.Reply(), Seq: req.Seq, Status: status, ValueVersion: version},
		Key:    req.Key, Value: value,
	}
	id := requestID{src, req.Op, req.Seq}
	s.mu.Lock()
	if req.Op == wire.OpGet && !s.untracked {
		r.Flags = wire.FlagTracked
	}
	if req.Op == wire.OpFetch && s.epoch != 0 {
		r.SetEpoch(s.epoch)
	}
	delete(s.pending, id)
	s.replied[id] = r
	s.mu.Unlock()
	if err := s.ep.Send(src, r); err != nil {
		s.t.Errorf("stub shim: %v", err)
	}
}

func (s *stubShim) setValue(key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[key] = []byte(value)
}

func (s *stubShim) deleteValue(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.values, key)
}

func (s *stubShim) setCounter(c uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counter = c
}

func (s *stubShim) setEpoch(e uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch = e
}

func (s *stubShim) setHold(op wire.Op, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold[op] = on
}

// count is the number of distinct requests of op received.
func (s *stubShim) count(op wire.Op) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[op]
}

// nextHeld waits for the next held request.
func (s *stubShim) nextHeld(ctx context.Context, t testing.TB) *heldRequest {
	t.Helper()
	select {
	case h := <-s.held:
		return h
	case <-ctx.Done():
		t.Fatalf("stub shim: no held request: %v", ctx.Err())
		return nil
	}
}

// release answers h from the stub's map and counter as they are now.
func (h *heldRequest) release() { h.s.answerFromMap(h.src, &h.req) }

// reply answers h with value and version c.
func (h *heldRequest) reply(c uint64, value string) {
	h.s.answer(h.src, &h.req, wire.StatusOK, c, []byte(value))
}

// grant answers the held RENEW h with a lease of epoch e for length,
// granted under map version 0.
func (h *heldRequest) grant(e uint64, length time.Duration) { h.grantUnder(e, length, 0) }

// grantUnder answers the held RENEW h with a lease of epoch e for
// length, granted under map version mapVersion.
func (h *heldRequest) grantUnder(e uint64, length time.Duration, mapVersion uint64) {
	r := &wire.Message{
		Header: wire.Header{Op: wire.OpRenewReply, Seq: h.req.Seq, Status: wire.StatusOK, ValueVersion: uint64(length),
			MapVersion: mapVersion},
		Key: h.req.Key,
	}
	r.SetEpoch(e)
	if err := h.s.ep.Send(h.src, r); err != nil {
		h.s.t.Errorf("stub shim: %v", err)
	}
}

// notFound answers h with StatusNotFound.
func (h *heldRequest) notFound() { h.s.answer(h.src, &h.req, wire.StatusNotFound, 0, nil) }

// notFoundAt answers the held FETCH "not in storage" at counter c, as a
// shim that knows negative entries does.
func (h *heldRequest) notFoundAt(c uint64) { h.s.answer(h.src, &h.req, wire.StatusNotFound, c, nil) }
