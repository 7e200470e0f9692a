package p4entity

import (
	"encoding/binary"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// Update is an update of type typ carrying e.
func Update(typ p4v1.Update_Type, e *p4v1.Entity) *p4v1.Update {
	return &p4v1.Update{Type: typ, Entity: e}
}

// Exact is an exact match of field id on v.
func Exact(id uint32, v []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

// Range is a range match of field id on [low, high].
func Range(id uint32, low, high []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: low, High: high}}}
}

// Exacts are exact matches of fields 1, 2, … on vs in order; nil for none.
func Exacts(vs ...[]byte) []*p4v1.FieldMatch {
	var out []*p4v1.FieldMatch
	for i, v := range vs {
		out = append(out, Exact(uint32(i+1), v))
	}
	return out
}

// TableEntry is an entry of table with exact matches (field ids 1, 2, …
// in order) running action with params (ids 1, 2, … in order); no action
// when action is 0, as for a delete.
func TableEntry(table, action uint32, matches [][]byte, params ...[]byte) *p4v1.Entity {
	return Entry(table, 0, Exacts(matches...), action, params...)
}

// Entry is an entry of table at priority with matches of any kind (none
// is "don't care" on every field) running action with params (ids 1, 2, …
// in order); no action when action is 0. TableEntry is its common form.
func Entry(table uint32, priority int32, matches []*p4v1.FieldMatch, action uint32, params ...[]byte) *p4v1.Entity {
	te := &p4v1.TableEntry{TableId: table, Match: matches, Priority: priority}
	if action != 0 {
		a := &p4v1.Action{ActionId: action}
		for i, p := range params {
			a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: p})
		}
		te.Action = &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: te}}
}

// Register is cell i of register id (every cell when i < 0), with value v
// (nil for a read).
func Register(id uint32, i int64, v []byte) *p4v1.Entity {
	re := &p4v1.RegisterEntry{RegisterId: id}
	if i >= 0 {
		re.Index = &p4v1.Index{Index: i}
	}
	if v != nil {
		re.Data = &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: v}}
	}
	return &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: re}}
}

// CounterCell is cell i of counter id, for a read.
func CounterCell(id uint32, i int64) *p4v1.Entity {
	return &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{CounterId: id, Index: &p4v1.Index{Index: i}}}}
}

// U16 is v as a 2-byte big-endian bytestring.
func U16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// U32 is v as a 4-byte big-endian bytestring.
func U32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// U64 is v as an 8-byte big-endian bytestring.
func U64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
