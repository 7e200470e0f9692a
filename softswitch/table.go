package softswitch

import (
	"fmt"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// table is one P4 table: its entries by match key, and its default action.
type table struct {
	info    *p4configv1.Table
	actions map[uint32]*p4configv1.Action // the actions the table may run
	scopes  map[uint32]p4configv1.ActionRef_Scope
	entries map[string]*entry
	def     *entry // the default action; match is empty
	// ranged: the table has a range field, so its entries carry a
	// priority and are matched by a scan of byPriority (highest first)
	// instead of by key (range.go).
	ranged     bool
	byPriority []*entry
}

// entry is a table entry as the controller wrote it (canonical
// bytestrings, for reads) and its action's parameters decoded for the
// data path.
type entry struct {
	te     *p4v1.TableEntry
	action uint32
	params []uint64
	// lows and highs bound each match field's value, in P4Info order, in
	// a ranged table (an exact field has low = high; an omitted range
	// field the whole width).
	lows, highs []uint64
}

func newTable(info *p4configv1.Table, actions map[uint32]*p4configv1.Action) (*table, error) {
	t := &table{info: info, actions: map[uint32]*p4configv1.Action{}, scopes: map[uint32]p4configv1.ActionRef_Scope{}, entries: map[string]*entry{}}
	for _, f := range info.MatchFields {
		if f.GetMatchType() == p4configv1.MatchField_RANGE {
			t.ranged = true
		}
	}
	if t.ranged {
		for _, f := range info.MatchFields {
			if f.Bitwidth > 64 {
				return nil, fmt.Errorf("cannot build table %s: field %s of %d bits in a table with range matches (the software switch matches those on 64 bits at most)", info.Preamble.Name, f.Name, f.Bitwidth)
			}
		}
	}
	for _, ref := range info.ActionRefs {
		a, ok := actions[ref.Id]
		if !ok {
			return nil, fmt.Errorf("cannot build table %s: action %d is not in the P4Info", info.Preamble.Name, ref.Id)
		}
		t.actions[ref.Id] = a
		t.scopes[ref.Id] = ref.Scope
	}
	return t, nil
}

// appendKey appends the match key of one field value: its length, then
// its canonical bytes. Entries and the data path build keys alike.
func appendKey(dst, canonicalValue []byte) []byte {
	return append(append(dst, byte(len(canonicalValue))), canonicalValue...)
}

// matchKey checks ms against the table's match fields and returns the
// entry's key and its matches in canonical form, in P4Info order.
func (t *table) matchKey(ms []*p4v1.FieldMatch) (string, []*p4v1.FieldMatch, error) {
	byID := map[uint32]*p4v1.FieldMatch{}
	for _, m := range ms {
		if _, dup := byID[m.FieldId]; dup {
			return "", nil, fmt.Errorf("match field %d given twice", m.FieldId)
		}
		byID[m.FieldId] = m
	}
	var key []byte
	var out []*p4v1.FieldMatch
	for _, f := range t.info.MatchFields {
		m, ok := byID[f.Id]
		delete(byID, f.Id)
		bits := int(f.Bitwidth)
		switch f.GetMatchType() {
		case p4configv1.MatchField_EXACT:
			if !ok || m.GetExact() == nil {
				return "", nil, fmt.Errorf("exact match field %s (%d) missing", f.Name, f.Id)
			}
			v, err := canonical(m.GetExact().Value, bits)
			if err != nil {
				return "", nil, fmt.Errorf("match field %s: %w", f.Name, err)
			}
			key = appendKey(key, v)
			out = append(out, p4entity.Exact(f.Id, v))
		case p4configv1.MatchField_LPM:
			if !ok {
				key = appendKey(key, nil) // the wildcard
				continue
			}
			lpm := m.GetLpm()
			if lpm == nil || lpm.PrefixLen <= 0 || int(lpm.PrefixLen) > bits {
				return "", nil, fmt.Errorf("match field %s: an lpm match of prefix 1…%d", f.Name, bits)
			}
			v, err := canonical(lpm.Value, bits)
			if err != nil {
				return "", nil, fmt.Errorf("match field %s: %w", f.Name, err)
			}
			key = appendKey(append(key, byte(lpm.PrefixLen)), v)
			out = append(out, &p4v1.FieldMatch{FieldId: f.Id, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: lpm.PrefixLen}}})
		case p4configv1.MatchField_RANGE:
			if !ok {
				key = appendKey(key, nil) // don't care
				continue
			}
			fm, err := canonicalRange(f, m)
			if err != nil {
				return "", nil, err
			}
			key = appendKey(appendKey(key, fm.GetRange().Low), fm.GetRange().High)
			out = append(out, fm)
		default:
			return "", nil, fmt.Errorf("match field %s: match kind %s is not supported by the software switch", f.Name, f.GetMatchType())
		}
	}
	for id := range byID {
		return "", nil, fmt.Errorf("table %s has no match field %d", t.info.Preamble.Name, id)
	}
	return string(key), out, nil
}

// checkAction checks a against the table's actions and the action's
// parameters, and decodes them. asDefault: for the default entry.
func (t *table) checkAction(ta *p4v1.TableAction, asDefault bool) (*p4v1.Action, []uint64, error) {
	a := ta.GetAction()
	if a == nil {
		return nil, nil, fmt.Errorf("table %s: only direct actions are supported", t.info.Preamble.Name)
	}
	info, ok := t.actions[a.ActionId]
	if !ok {
		return nil, nil, fmt.Errorf("table %s cannot run action %d", t.info.Preamble.Name, a.ActionId)
	}
	switch scope := t.scopes[a.ActionId]; {
	case asDefault && scope == p4configv1.ActionRef_TABLE_ONLY:
		return nil, nil, fmt.Errorf("action %s cannot be table %s's default", info.Preamble.Name, t.info.Preamble.Name)
	case !asDefault && scope == p4configv1.ActionRef_DEFAULT_ONLY:
		return nil, nil, fmt.Errorf("action %s is table %s's default only", info.Preamble.Name, t.info.Preamble.Name)
	}
	given := map[uint32][]byte{}
	for _, p := range a.Params {
		if _, dup := given[p.ParamId]; dup {
			return nil, nil, fmt.Errorf("action %s: parameter %d given twice", info.Preamble.Name, p.ParamId)
		}
		given[p.ParamId] = p.Value
	}
	out := &p4v1.Action{ActionId: a.ActionId}
	params := make([]uint64, len(info.Params))
	for i, p := range info.Params {
		b, ok := given[p.Id]
		if !ok {
			return nil, nil, fmt.Errorf("action %s: parameter %s missing", info.Preamble.Name, p.Name)
		}
		delete(given, p.Id)
		v, err := canonical(b, int(p.Bitwidth))
		if err != nil {
			return nil, nil, fmt.Errorf("action %s parameter %s: %w", info.Preamble.Name, p.Name, err)
		}
		params[i] = pipelines.BytesUint(v) // every parameter of the programs fits 64 bits
		out.Params = append(out.Params, &p4v1.Action_Param{ParamId: p.Id, Value: v})
	}
	for id := range given {
		return nil, nil, fmt.Errorf("action %s has no parameter %d", info.Preamble.Name, id)
	}
	return out, params, nil
}

// write applies one update of the table; errors carry the gRPC code
// P4Runtime gives them.
func (t *table) write(typ p4v1.Update_Type, te *p4v1.TableEntry) error {
	if te.IsDefaultAction {
		return t.writeDefault(typ, te)
	}
	key, ms, err := t.entryKey(te)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	_, exists := t.entries[key]
	switch typ {
	case p4v1.Update_DELETE:
		if !exists {
			return status.Errorf(codes.NotFound, "table %s has no such entry", t.info.Preamble.Name)
		}
		t.unorder(t.entries[key])
		delete(t.entries, key)
		return nil
	case p4v1.Update_INSERT:
		if exists {
			return status.Errorf(codes.AlreadyExists, "table %s already has this entry", t.info.Preamble.Name)
		}
		if int64(len(t.entries)) >= t.info.Size {
			return status.Errorf(codes.ResourceExhausted, "table %s is full (%d entries)", t.info.Preamble.Name, t.info.Size)
		}
	case p4v1.Update_MODIFY:
		if !exists {
			return status.Errorf(codes.NotFound, "table %s has no such entry to modify", t.info.Preamble.Name)
		}
	default:
		return status.Errorf(codes.InvalidArgument, "update type %s", typ)
	}
	a, params, err := t.checkAction(te.Action, false)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	stored := &p4v1.TableEntry{TableId: te.TableId, Match: ms, Priority: te.Priority, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}, Metadata: te.Metadata}
	e := &entry{te: stored, action: a.ActionId, params: params}
	if old, ok := t.entries[key]; ok {
		t.unorder(old)
	}
	t.entries[key] = e
	if t.ranged {
		t.order(e)
	}
	return nil
}

func (t *table) writeDefault(typ p4v1.Update_Type, te *p4v1.TableEntry) error {
	if len(te.Match) != 0 || te.Priority != 0 {
		return status.Errorf(codes.InvalidArgument, "table %s: the default entry has no match and no priority", t.info.Preamble.Name)
	}
	if typ != p4v1.Update_MODIFY {
		return status.Errorf(codes.InvalidArgument, "table %s: the default entry can only be modified", t.info.Preamble.Name)
	}
	if te.Action == nil {
		return status.Errorf(codes.Unimplemented, "table %s: resetting the default action is not supported; write it", t.info.Preamble.Name)
	}
	a, params, err := t.checkAction(te.Action, true)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	t.def = &entry{te: &p4v1.TableEntry{TableId: te.TableId, IsDefaultAction: true, Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}}, action: a.ActionId, params: params}
	return nil
}

// lookup is the entry key matches, or nil: the default action runs.
func (t *table) lookup(key []byte) *entry { return t.entries[string(key)] }

// entriesMatching appends the entries that read filter te selects: all of
// them, or the one of te's match, or the default entry.
func (t *table) read(te *p4v1.TableEntry, dst []*p4v1.Entity) ([]*p4v1.Entity, error) {
	wrap := func(e *p4v1.TableEntry) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: proto.Clone(e).(*p4v1.TableEntry)}}
	}
	switch {
	case te.IsDefaultAction:
		if t.def != nil {
			dst = append(dst, wrap(t.def.te))
		}
	case len(te.Match) > 0:
		key, _, err := t.entryKey(te)
		if err != nil {
			return dst, status.Error(codes.InvalidArgument, err.Error())
		}
		if e, ok := t.entries[key]; ok {
			dst = append(dst, wrap(e.te))
		}
	default:
		for _, e := range t.entries {
			dst = append(dst, wrap(e.te))
		}
	}
	return dst, nil
}
