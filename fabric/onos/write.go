package onos

import (
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Write applies P4Runtime updates of table entries as flow rules:
// INSERT and MODIFY add the entry's flow (ONOS replaces a flow with the
// same match, priority and table), DELETE removes the flow of the
// entry's match. Runs of consecutive adds or deletes go in one request
// each, in the updates' order. A batch with any update but a table
// entry's — a register, counter, meter or digest — fails whole with
// ErrNotInREST, before anything is sent.
func (s *Session) Write(ctx context.Context, updates ...*p4v1.Update) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tr == nil {
		return fmt.Errorf("cannot write to %s: %w", s.cfg.Switch.DeviceID, ErrNoPipeline)
	}
	type op struct {
		del  bool
		flow Flow
	}
	ops := make([]op, 0, len(updates))
	for _, u := range updates {
		te := u.GetEntity().GetTableEntry()
		if te == nil {
			return fmt.Errorf("cannot write %s through ONOS's REST API: %w", s.describe(u.GetEntity()), ErrNotInREST)
		}
		del := u.GetType() == p4v1.Update_DELETE
		f, err := s.tr.toFlow(s.cfg.Switch.DeviceID, te, !del)
		if err != nil {
			return fmt.Errorf("cannot write to %s: %w", s.cfg.Switch.DeviceID, err)
		}
		ops = append(ops, op{del: del, flow: f})
	}
	for i := 0; i < len(ops); {
		j := i
		var run []Flow
		for ; j < len(ops) && ops[j].del == ops[i].del; j++ {
			run = append(run, ops[j].flow)
		}
		var err error
		if ops[i].del {
			err = s.remove(ctx, run)
		} else {
			err = s.add(ctx, run)
		}
		if err != nil {
			return fmt.Errorf("cannot write %d updates to %s (%d applied): %w", len(updates), s.cfg.Switch.DeviceID, i, err)
		}
		i = j
	}
	return nil
}

func (s *Session) add(ctx context.Context, flows []Flow) error {
	refs, err := s.c.AddFlows(ctx, flows)
	if err != nil {
		return err
	}
	for i, f := range flows {
		s.flows[matchKey(f)] = refs[i].FlowID
	}
	return nil
}

// remove removes the flows of the entries' matches, reading the device's
// flows once if some are not among those the session knows.
func (s *Session) remove(ctx context.Context, flows []Flow) error {
	refs := make([]FlowRef, 0, len(flows))
	read := false
	for _, f := range flows {
		k := matchKey(f)
		id, ok := s.flows[k]
		if !ok && !read {
			if err := s.readFlows(ctx); err != nil {
				return err
			}
			read = true
			id, ok = s.flows[k]
		}
		if !ok {
			return fmt.Errorf("cannot delete the entry of %s: %w", f.Table(), ErrNoEntry)
		}
		refs = append(refs, FlowRef{DeviceID: s.cfg.Switch.DeviceID, FlowID: id})
	}
	if err := s.c.RemoveFlows(ctx, refs); err != nil {
		return err
	}
	for _, f := range flows {
		delete(s.flows, matchKey(f))
	}
	return nil
}

// readFlows replaces the session's flow ids by the device's flows of the
// client's application that are not failed or on their way out.
func (s *Session) readFlows(ctx context.Context) error {
	flows, err := s.c.Flows(ctx, s.cfg.Switch.DeviceID)
	if err != nil {
		return err
	}
	s.flows = map[string]string{}
	for _, f := range s.mine(flows) {
		s.flows[matchKey(f)] = f.ID
	}
	return nil
}

// mine are the flows of the client's application in a state that counts
// as installed or about to be.
func (s *Session) mine(flows []Flow) []Flow {
	var out []Flow
	for _, f := range flows {
		if f.AppID != s.c.appID {
			continue
		}
		switch f.State {
		case "FAILED", "PENDING_REMOVE", "REMOVED":
			continue
		}
		out = append(out, f)
	}
	return out
}

// Read reads table entries — every entry of the client's application on
// the device, or of one table (a filter with its table id) — back from
// ONOS's flow rules. A filter of anything else fails with ErrNotInREST.
func (s *Session) Read(ctx context.Context, filters ...*p4v1.Entity) ([]*p4v1.Entity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tr == nil {
		return nil, fmt.Errorf("cannot read from %s: %w", s.cfg.Switch.DeviceID, ErrNoPipeline)
	}
	tables := map[uint32]bool{}
	all := false
	for _, f := range filters {
		te := f.GetTableEntry()
		if te == nil {
			return nil, fmt.Errorf("cannot read %s through ONOS's REST API: %w", s.describe(f), ErrNotInREST)
		}
		if te.GetTableId() == 0 {
			all = true
		}
		tables[te.GetTableId()] = true
	}
	flows, err := s.c.Flows(ctx, s.cfg.Switch.DeviceID)
	if err != nil {
		return nil, fmt.Errorf("cannot read from %s: %w", s.cfg.Switch.DeviceID, err)
	}
	var out []*p4v1.Entity
	for _, f := range s.mine(flows) {
		te, err := s.tr.toEntry(f)
		if err != nil {
			return nil, fmt.Errorf("cannot read from %s: %w", s.cfg.Switch.DeviceID, err)
		}
		if all || tables[te.GetTableId()] {
			out = append(out, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}})
		}
	}
	return out, nil
}

// describe names an entity that is no table entry, for errors: "register
// lease_until", "counter cache_hits", "digest hot_key_t".
func (s *Session) describe(e *p4v1.Entity) string {
	switch x := e.GetEntity().(type) {
	case *p4v1.Entity_RegisterEntry:
		return "register " + s.tr.name(x.RegisterEntry.GetRegisterId())
	case *p4v1.Entity_CounterEntry:
		return "counter " + s.tr.name(x.CounterEntry.GetCounterId())
	case *p4v1.Entity_DigestEntry:
		return "digest " + s.tr.name(x.DigestEntry.GetDigestId())
	case *p4v1.Entity_DirectCounterEntry:
		return "a direct counter"
	case *p4v1.Entity_MeterEntry:
		return "meter " + fmt.Sprint(x.MeterEntry.GetMeterId())
	case nil:
		return "an empty entity"
	}
	return fmt.Sprintf("a %T", e.GetEntity())
}
