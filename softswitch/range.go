package softswitch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	pipelines "github.com/distcache/distcache/stratum_pipelines"
	"github.com/distcache/distcache/stratum_pipelines/p4entity"
)

// Range matches (the client leaf's spine_owner). As P4Runtime specifies,
// an entry of a table with a range field has a priority (higher wins), its
// priority is part of its identity, a range is low ≤ high within the
// field's width, and a range covering the whole width is "don't care",
// written by omitting the field. A packet's lookup scans the entries from
// the highest priority down and takes the first whose every field holds
// the packet's value: a table of a few thousand ranges costs a few
// microseconds a lookup, which the software client leaf accepts (a switch
// matches ranges in TCAM).

// entryKey checks te's priority against the table's kind and returns the
// entry's key (its match, and its priority in a ranged table) and its
// matches in canonical form.
func (t *table) entryKey(te *p4v1.TableEntry) (string, []*p4v1.FieldMatch, error) {
	switch {
	case !t.ranged && te.Priority != 0:
		return "", nil, fmt.Errorf("table %s: priority %d on a table without ternary, range or optional fields", t.info.Preamble.Name, te.Priority)
	case t.ranged && te.Priority <= 0:
		return "", nil, fmt.Errorf("table %s: an entry of a table with range fields needs a positive priority", t.info.Preamble.Name)
	}
	key, ms, err := t.matchKey(te.Match)
	if err != nil {
		return "", nil, err
	}
	if t.ranged {
		key = string(binary.BigEndian.AppendUint32([]byte(key), uint32(te.Priority)))
	}
	return key, ms, nil
}

// canonicalRange checks m, a match of range field f, and returns it with
// canonical bounds.
func canonicalRange(f *p4configv1.MatchField, m *p4v1.FieldMatch) (*p4v1.FieldMatch, error) {
	r := m.GetRange()
	if r == nil {
		return nil, fmt.Errorf("match field %s: a range match expected", f.Name)
	}
	bits := int(f.Bitwidth)
	lo, err := canonical(r.Low, bits)
	if err != nil {
		return nil, fmt.Errorf("match field %s low: %w", f.Name, err)
	}
	hi, err := canonical(r.High, bits)
	if err != nil {
		return nil, fmt.Errorf("match field %s high: %w", f.Name, err)
	}
	if bitLen(lo) > bitLen(hi) || (bitLen(lo) == bitLen(hi) && bytes.Compare(lo, hi) > 0) {
		return nil, fmt.Errorf("match field %s: low %#x above high %#x", f.Name, lo, hi)
	}
	if pipelines.BytesUint(lo) == 0 && bitLen(hi) == bits && pipelines.BytesUint(hi) == fieldMax(bits) {
		return nil, fmt.Errorf("match field %s: a range over the whole field is don't care, written by omitting the field", f.Name)
	}
	return p4entity.Range(f.Id, lo, hi), nil
}

// fieldMax is the largest value of a field of bits (at most 64).
func fieldMax(bits int) uint64 { return ^uint64(0) >> (64 - bits) }

// order decodes e's bounds and puts it among the table's entries by
// priority, after those of the same priority.
func (t *table) order(e *entry) {
	byID := map[uint32]*p4v1.FieldMatch{}
	for _, m := range e.te.Match {
		byID[m.FieldId] = m
	}
	for _, f := range t.info.MatchFields {
		lo, hi := uint64(0), fieldMax(int(f.Bitwidth))
		switch m := byID[f.Id]; {
		case m == nil:
		case m.GetRange() != nil:
			lo, hi = pipelines.BytesUint(m.GetRange().Low), pipelines.BytesUint(m.GetRange().High)
		case m.GetExact() != nil:
			lo = pipelines.BytesUint(m.GetExact().Value)
			hi = lo
		}
		e.lows, e.highs = append(e.lows, lo), append(e.highs, hi)
	}
	i, _ := slices.BinarySearchFunc(t.byPriority, e.te.Priority, func(x *entry, p int32) int {
		if x.te.Priority >= p {
			return -1
		}
		return 1
	})
	t.byPriority = slices.Insert(t.byPriority, i, e)
}

// unorder removes e from the table's order, if it is in it.
func (t *table) unorder(e *entry) {
	if i := slices.Index(t.byPriority, e); i >= 0 {
		t.byPriority = slices.Delete(t.byPriority, i, i+1)
	}
}

// lookupRange is the entry of highest priority whose fields hold values
// (one per match field, in P4Info order), or nil: the default action
// runs.
func (t *table) lookupRange(values ...uint64) *entry {
next:
	for _, e := range t.byPriority {
		for i, v := range values {
			if v < e.lows[i] || v > e.highs[i] {
				continue next
			}
		}
		return e
	}
	return nil
}
