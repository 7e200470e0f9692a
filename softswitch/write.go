package softswitch

import (
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Write applies updates in order and returns one error per update (nil
// for those applied), as P4Runtime's Write reports them. Each update is
// atomic with respect to the packets; the batch is not.
func (s *Switch) Write(updates []*p4v1.Update) []error {
	errs := make([]error, len(updates))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, u := range updates {
		if s.st == nil {
			errs[i] = errUnconfigured
			continue
		}
		errs[i] = s.st.write(u)
	}
	return errs
}

func (st *state) write(u *p4v1.Update) error {
	e := u.GetEntity()
	switch {
	case e.GetTableEntry() != nil:
		te := e.GetTableEntry()
		t, ok := st.tables[te.TableId]
		if !ok {
			return status.Errorf(codes.NotFound, "no table %d", te.TableId)
		}
		return t.write(u.Type, te)
	case e.GetRegisterEntry() != nil:
		return st.writeRegister(u.Type, e.GetRegisterEntry())
	case e.GetCounterEntry() != nil:
		return st.writeCounter(u.Type, e.GetCounterEntry())
	case e.GetDigestEntry() != nil:
		return st.writeDigest(u.Type, e.GetDigestEntry())
	default:
		return status.Errorf(codes.Unimplemented, "the software switch does not support writing %T", e.GetEntity())
	}
}

// writeDigest accepts the controller's digest configuration; the switch
// sends each hot-key report as a DigestList of one, at once.
func (st *state) writeDigest(typ p4v1.Update_Type, de *p4v1.DigestEntry) error {
	if _, ok := st.digests[de.DigestId]; !ok {
		return status.Errorf(codes.NotFound, "no digest %d", de.DigestId)
	}
	switch typ {
	case p4v1.Update_INSERT, p4v1.Update_MODIFY, p4v1.Update_DELETE:
		return nil
	default:
		return status.Errorf(codes.InvalidArgument, "digest: update type %s", typ)
	}
}

// Read returns the entities the filters select.
func (s *Switch) Read(filters []*p4v1.Entity) ([]*p4v1.Entity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return nil, errUnconfigured
	}
	var out []*p4v1.Entity
	var err error
	for _, f := range filters {
		switch {
		case f.GetTableEntry() != nil:
			out, err = s.st.readTables(f.GetTableEntry(), out)
		case f.GetRegisterEntry() != nil:
			out, err = s.st.readRegister(f.GetRegisterEntry(), out)
		case f.GetCounterEntry() != nil:
			out, err = s.st.readCounter(f.GetCounterEntry(), out)
		default:
			err = status.Errorf(codes.Unimplemented, "the software switch does not support reading %T", f.GetEntity())
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (st *state) readTables(te *p4v1.TableEntry, dst []*p4v1.Entity) ([]*p4v1.Entity, error) {
	if te.TableId != 0 {
		t, ok := st.tables[te.TableId]
		if !ok {
			return dst, status.Errorf(codes.NotFound, "no table %d", te.TableId)
		}
		return t.read(te, dst)
	}
	var err error
	for _, t := range st.tables {
		if dst, err = t.read(te, dst); err != nil {
			return dst, fmt.Errorf("cannot read table %s: %w", t.info.Preamble.Name, err)
		}
	}
	return dst, nil
}
