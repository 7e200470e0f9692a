package onos

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// DefaultPriority is the flow priority of an entry without a P4Runtime
// priority (of a table with only exact and LPM matches, where ONOS's PI
// translation does not use it; ONOS requires one).
const DefaultPriority = 10

// Flow rule JSON constants of ONOS's codecs.
const (
	piType       = "PROTOCOL_INDEPENDENT"
	piActionType = "ACTION"
)

// translator turns P4Runtime table entries into ONOS PI flow rules and
// back, by the names of the program's P4Info: ONOS's PI ids are the
// P4Info names of tables, match fields, actions and parameters.
type translator struct {
	info    *p4configv1.P4Info
	tables  map[uint32]*p4configv1.Table
	byName  map[string]*p4configv1.Table
	actions map[uint32]*p4configv1.Action
	actName map[string]*p4configv1.Action
}

func newTranslator(info *p4configv1.P4Info) *translator {
	t := &translator{info: info, tables: map[uint32]*p4configv1.Table{}, byName: map[string]*p4configv1.Table{},
		actions: map[uint32]*p4configv1.Action{}, actName: map[string]*p4configv1.Action{}}
	for _, tb := range info.GetTables() {
		t.tables[tb.GetPreamble().GetId()] = tb
		t.byName[tb.GetPreamble().GetName()] = tb
	}
	for _, a := range info.GetActions() {
		t.actions[a.GetPreamble().GetId()] = a
		t.actName[a.GetPreamble().GetName()] = a
	}
	return t
}

// name is the P4Info name of the object with id (for errors).
func (t *translator) name(id uint32) string {
	for _, pre := range t.preambles() {
		if pre.GetId() == id {
			return pre.GetName()
		}
	}
	return fmt.Sprintf("#%d", id)
}

func (t *translator) preambles() []*p4configv1.Preamble {
	var pre []*p4configv1.Preamble
	for _, x := range t.info.GetRegisters() {
		pre = append(pre, x.GetPreamble())
	}
	for _, x := range t.info.GetCounters() {
		pre = append(pre, x.GetPreamble())
	}
	for _, x := range t.info.GetDigests() {
		pre = append(pre, x.GetPreamble())
	}
	return pre
}

// hexBytes is v as ONOS's HexString reads it; the empty bytestring is 0.
func hexBytes(v []byte) string {
	if len(v) == 0 {
		return "00"
	}
	return hex.EncodeToString(v)
}

// toFlow is the flow rule of te on deviceID; the action is left out for
// a delete (withAction false).
func (t *translator) toFlow(deviceID string, te *p4v1.TableEntry, withAction bool) (Flow, error) {
	tb, ok := t.tables[te.GetTableId()]
	if !ok {
		return Flow{}, fmt.Errorf("the P4Info has no table %d", te.GetTableId())
	}
	table := tb.GetPreamble().GetName()
	if te.GetPriority() > 65535 {
		return Flow{}, fmt.Errorf("entry of %s has priority %d, more than ONOS's 65535", table, te.GetPriority())
	}
	name, _ := json.Marshal(table)
	f := Flow{DeviceID: deviceID, TableID: name, Priority: DefaultPriority, IsPermanent: true,
		Selector: Selector{Criteria: []Criterion{}}, Treatment: Treatment{Instructions: []Instruction{}}}
	if te.GetPriority() > 0 {
		f.Priority = int(te.GetPriority())
	}
	if te.GetIsDefaultAction() && len(te.GetMatch()) > 0 {
		return Flow{}, fmt.Errorf("default entry of %s has matches", table)
	}
	matches, err := t.matches(tb, te.GetMatch())
	if err != nil {
		return Flow{}, err
	}
	if len(matches) > 0 { // none: ONOS's default entry of the table
		f.Selector.Criteria = []Criterion{{Type: piType, Matches: matches}}
	}
	if !withAction {
		return f, nil
	}
	in, err := t.instruction(table, te.GetAction())
	if err != nil {
		return Flow{}, err
	}
	f.Treatment.Instructions = []Instruction{in}
	return f, nil
}

func (t *translator) matches(tb *p4configv1.Table, fms []*p4v1.FieldMatch) ([]PIMatch, error) {
	fields := map[uint32]*p4configv1.MatchField{}
	for _, mf := range tb.GetMatchFields() {
		fields[mf.GetId()] = mf
	}
	sorted := append([]*p4v1.FieldMatch(nil), fms...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].GetFieldId() < sorted[j].GetFieldId() })
	var out []PIMatch
	for _, fm := range sorted {
		mf, ok := fields[fm.GetFieldId()]
		if !ok {
			return nil, fmt.Errorf("table %s has no match field %d", tb.GetPreamble().GetName(), fm.GetFieldId())
		}
		m := PIMatch{Field: mf.GetName()}
		switch k := fm.GetFieldMatchType().(type) {
		case *p4v1.FieldMatch_Exact_:
			m.Match, m.Value = "exact", hexBytes(k.Exact.GetValue())
		case *p4v1.FieldMatch_Lpm:
			prefix := int(k.Lpm.GetPrefixLen())
			m.Match, m.Value, m.PrefixLength = "lpm", hexBytes(k.Lpm.GetValue()), &prefix
		case *p4v1.FieldMatch_Ternary_:
			m.Match, m.Value, m.Mask = "ternary", hexBytes(k.Ternary.GetValue()), hexBytes(k.Ternary.GetMask())
		case *p4v1.FieldMatch_Range_:
			m.Match, m.LowValue, m.HighValue = "range", hexBytes(k.Range.GetLow()), hexBytes(k.Range.GetHigh())
		case *p4v1.FieldMatch_Optional_:
			m.Match, m.Value = "optional", hexBytes(k.Optional.GetValue())
		default:
			return nil, fmt.Errorf("match on %s of table %s has no kind ONOS takes", mf.GetName(), tb.GetPreamble().GetName())
		}
		if want := strings.ToLower(mf.GetMatchType().String()); mf.GetMatchType() != p4configv1.MatchField_UNSPECIFIED && want != m.Match {
			return nil, fmt.Errorf("match on %s of table %s is %s, the P4Info says %s", mf.GetName(), tb.GetPreamble().GetName(), m.Match, want)
		}
		out = append(out, m)
	}
	return out, nil
}

func (t *translator) instruction(table string, ta *p4v1.TableAction) (Instruction, error) {
	a := ta.GetAction()
	if a == nil {
		return Instruction{}, fmt.Errorf("entry of %s has no direct action (action profiles are not translated)", table)
	}
	act, ok := t.actions[a.GetActionId()]
	if !ok {
		return Instruction{}, fmt.Errorf("the P4Info has no action %d", a.GetActionId())
	}
	params := map[uint32]string{}
	for _, p := range act.GetParams() {
		params[p.GetId()] = p.GetName()
	}
	in := Instruction{Type: piType, Subtype: piActionType, ActionID: act.GetPreamble().GetName()}
	for _, p := range a.GetParams() {
		name, ok := params[p.GetParamId()]
		if !ok {
			return Instruction{}, fmt.Errorf("action %s has no parameter %d", in.ActionID, p.GetParamId())
		}
		if in.ActionParams == nil {
			in.ActionParams = map[string]string{}
		}
		in.ActionParams[name] = hexBytes(p.GetValue())
	}
	return in, nil
}

// toEntry is the P4Runtime table entry of a flow rule ONOS answered;
// values are in P4Runtime's canonical form (pipelines.StripZeros).
func (t *translator) toEntry(f Flow) (*p4v1.TableEntry, error) {
	tb, ok := t.byName[f.Table()]
	if !ok {
		return nil, fmt.Errorf("flow %s is in table %s, which the P4Info has not", f.ID, f.Table())
	}
	te := &p4v1.TableEntry{TableId: tb.GetPreamble().GetId()}
	if needsPriority(tb) {
		te.Priority = int32(f.Priority)
	}
	fields := map[string]uint32{}
	for _, mf := range tb.GetMatchFields() {
		fields[mf.GetName()] = mf.GetId()
	}
	for _, c := range f.Selector.Criteria {
		if c.Type != piType {
			return nil, fmt.Errorf("flow %s matches %s, not on PI fields", f.ID, c.Type)
		}
		for _, m := range c.Matches {
			fm, err := fieldMatch(fields, m)
			if err != nil {
				return nil, fmt.Errorf("flow %s of %s: %w", f.ID, f.Table(), err)
			}
			te.Match = append(te.Match, fm)
		}
	}
	te.IsDefaultAction = len(te.Match) == 0
	if len(f.Treatment.Instructions) != 1 || f.Treatment.Instructions[0].Type != piType || f.Treatment.Instructions[0].Subtype != piActionType {
		return nil, fmt.Errorf("flow %s of %s has no single PI action", f.ID, f.Table())
	}
	in := f.Treatment.Instructions[0]
	act, ok := t.actName[in.ActionID]
	if !ok {
		return nil, fmt.Errorf("flow %s runs action %s, which the P4Info has not", f.ID, in.ActionID)
	}
	a := &p4v1.Action{ActionId: act.GetPreamble().GetId()}
	for _, p := range act.GetParams() { // in the P4Info's order
		v, ok := in.ActionParams[p.GetName()]
		if !ok {
			continue
		}
		b, err := hex.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("flow %s: parameter %s is %q: %w", f.ID, p.GetName(), v, err)
		}
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: p.GetId(), Value: pipelines.StripZeros(b)})
	}
	te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	return te, nil
}

func fieldMatch(fields map[string]uint32, m PIMatch) (*p4v1.FieldMatch, error) {
	id, ok := fields[m.Field]
	if !ok {
		return nil, fmt.Errorf("no match field %s", m.Field)
	}
	val := func(s string) ([]byte, error) {
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("match on %s is %q: %w", m.Field, s, err)
		}
		return pipelines.StripZeros(b), nil
	}
	fm := &p4v1.FieldMatch{FieldId: id}
	switch m.Match {
	case "exact":
		v, err := val(m.Value)
		fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}
		return fm, err
	case "lpm":
		v, err := val(m.Value)
		prefix := 0
		if m.PrefixLength != nil {
			prefix = *m.PrefixLength
		}
		fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: int32(prefix)}}
		return fm, err
	case "optional":
		v, err := val(m.Value)
		fm.FieldMatchType = &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: v}}
		return fm, err
	case "ternary":
		v, err := val(m.Value)
		if err != nil {
			return nil, err
		}
		mask, err := val(m.Mask)
		fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v, Mask: mask}}
		return fm, err
	case "range":
		lo, err := val(m.LowValue)
		if err != nil {
			return nil, err
		}
		hi, err := val(m.HighValue)
		fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: lo, High: hi}}
		return fm, err
	}
	return nil, fmt.Errorf("match on %s is of kind %q", m.Field, m.Match)
}

// needsPriority: P4Runtime entries of the table carry a priority (it has
// a ternary, range or optional match).
func needsPriority(tb *p4configv1.Table) bool {
	for _, mf := range tb.GetMatchFields() {
		switch mf.GetMatchType() {
		case p4configv1.MatchField_TERNARY, p4configv1.MatchField_RANGE, p4configv1.MatchField_OPTIONAL:
			return true
		}
	}
	return false
}

// matchKey identifies an entry of a table as P4Runtime does (table,
// matches with values in canonical form, priority), for finding the ONOS
// flow of an entry to delete.
func matchKey(f Flow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%d", f.Table(), f.Priority)
	for _, c := range f.Selector.Criteria {
		ms := append([]PIMatch(nil), c.Matches...)
		sort.Slice(ms, func(i, j int) bool { return ms[i].Field < ms[j].Field })
		for _, m := range ms {
			fmt.Fprintf(&b, "|%s=%s/%s/%s/%s", m.Field, canonicalHex(m.Value), canonicalHex(m.Mask), canonicalHex(m.LowValue), canonicalHex(m.HighValue))
			if m.PrefixLength != nil {
				fmt.Fprintf(&b, "/%d", *m.PrefixLength)
			}
		}
	}
	return b.String()
}

// canonicalHex strips a hex value's leading zero bytes, as P4Runtime's
// canonical bytestrings do, so that 000a and 0a are one key.
func canonicalHex(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		return s
	}
	return hex.EncodeToString(pipelines.StripZeros(b))
}
