package history

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Observed is what a read found.
type Observed struct {
	Value string `json:"value,omitempty"`
	Found bool   `json:"found"`
}

func (o Observed) String() string {
	if !o.Found {
		return "not found"
	}
	return fmt.Sprintf("%q", o.Value)
}

// Finals are the values a key may hold once every operation on it has
// ended.
type Finals struct {
	// Values are the values of the puts and acknowledged increments that
	// could be the last write.
	Values []string `json:"values,omitempty"`
	// NotFound reports that the key may not exist.
	NotFound bool `json:"notFound,omitempty"`
	// MinAdded and MaxAdded bound what the increments of unknown outcome
	// may have added after the last write: to an integer of Values, or to
	// 0 when NotFound, anything between them may have been added.
	MinAdded int64 `json:"minAdded,omitempty"`
	MaxAdded int64 `json:"maxAdded,omitempty"`
}

// Allows reports whether a final read that observed o is consistent with
// f.
func (f Finals) Allows(o Observed) bool {
	if !o.Found {
		return f.NotFound
	}
	if slices.Contains(f.Values, o.Value) {
		return true
	}
	n, ok := parseInteger(o.Value)
	if !ok || (f.MinAdded == 0 && f.MaxAdded == 0) {
		return false
	}
	if f.NotFound && f.MinAdded <= n && n <= f.MaxAdded {
		return true
	}
	for _, v := range f.Values {
		if base, ok := parseInteger(v); ok {
			if d, ok := sub(n, base); ok && f.MinAdded <= d && d <= f.MaxAdded {
				return true
			}
		}
	}
	return false
}

func (f Finals) String() string {
	parts := make([]string, 0, len(f.Values)+1)
	for _, v := range f.Values {
		parts = append(parts, fmt.Sprintf("%q", v))
	}
	if f.NotFound {
		parts = append(parts, "not found")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	s := strings.Join(parts, " or ")
	if f.MinAdded != 0 || f.MaxAdded != 0 {
		s += fmt.Sprintf(", plus %d to %d from increments of unknown outcome", f.MinAdded, f.MaxAdded)
	}
	return s
}

// PossibleFinals returns the values one key may hold once every operation
// in ops (that key's history; gets are ignored) has ended. A write w could
// be the last one unless an acknowledged write started after w returned; a
// write of unknown outcome may be the last one or never have been applied.
// "Not found" is possible when a delete could be last, or when no write was
// acknowledged (every write recorded is then of unknown outcome, or there
// is none). An acknowledged increment leaves the sum it returned; one of
// unknown outcome may have been applied after any write, or never: the
// values they may add up to are a range (any sum of their deltas lies in
// it). A refused increment is no write.
func PossibleFinals(ops []Operation) Finals {
	lastAckCall, acked := int64(0), false
	var f Finals
	for _, op := range ops {
		switch {
		case !mayWrite(op):
		case op.OutcomeUnknown():
			if op.Kind == Incr {
				f.MinAdded = saturatingAdd(f.MinAdded, min(op.Delta, 0))
				f.MaxAdded = saturatingAdd(f.MaxAdded, max(op.Delta, 0))
			}
		case !acked || op.Call > lastAckCall:
			lastAckCall, acked = op.Call, true
		}
	}
	f.NotFound = !acked
	for _, op := range ops {
		if !mayWrite(op) || (op.Kind == Incr && op.OutcomeUnknown()) || (acked && op.Return < lastAckCall) {
			continue // no write, one counted in the range, or one some acknowledged write followed
		}
		if op.Kind == Delete {
			f.NotFound = true
		} else {
			f.Values = append(f.Values, op.Value)
		}
	}
	return f
}

// saturatingAdd is a+b, held at the int64 bounds.
func saturatingAdd(a, b int64) int64 {
	if sum, ok := add(a, b); ok {
		return sum
	}
	if b > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// LostWrite is a key whose final read observed a value none of its
// possible last writes leaves.
type LostWrite struct {
	Key     string   `json:"key"`
	Got     Observed `json:"got"`
	Allowed Finals   `json:"allowed"`
}

func (l LostWrite) String() string {
	return fmt.Sprintf("%s: read %s, but only %s could be last", l.Key, l.Got, l.Allowed)
}

// LostWrites checks the final read of every key in finals against the
// key's history in ops, and returns the keys whose read is not a possible
// final value, sorted by key.
func LostWrites(ops []Operation, finals map[string]Observed) []LostWrite {
	byKey := map[string][]Operation{}
	for _, op := range ops {
		if _, ok := finals[op.Key]; ok && mayWrite(op) {
			byKey[op.Key] = append(byKey[op.Key], op)
		}
	}
	var lost []LostWrite
	for key, got := range finals {
		if f := PossibleFinals(byKey[key]); !f.Allows(got) {
			lost = append(lost, LostWrite{Key: key, Got: got, Allowed: f})
		}
	}
	slices.SortFunc(lost, func(a, b LostWrite) int { return strings.Compare(a.Key, b.Key) })
	return lost
}
