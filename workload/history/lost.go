package history

import (
	"fmt"
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
	// Values are the values of the puts that could be the last write.
	Values []string `json:"values,omitempty"`
	// NotFound reports that the key may not exist.
	NotFound bool `json:"notFound,omitempty"`
}

// Allows reports whether a final read that observed o is consistent with
// f.
func (f Finals) Allows(o Observed) bool {
	if !o.Found {
		return f.NotFound
	}
	return slices.Contains(f.Values, o.Value)
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
	return strings.Join(parts, " or ")
}

// PossibleFinals returns the values one key may hold once every operation
// in ops (that key's history; gets are ignored) has ended. A write w could
// be the last one unless an acknowledged write started after w returned; a
// write of unknown outcome may be the last one or never have been applied.
// "Not found" is possible when a delete could be last, or when no write was
// acknowledged (every write recorded is then of unknown outcome, or there
// is none).
func PossibleFinals(ops []Operation) Finals {
	lastAckCall, acked := int64(0), false
	for _, op := range ops {
		if op.Kind != Get && !op.OutcomeUnknown() && (!acked || op.Call > lastAckCall) {
			lastAckCall, acked = op.Call, true
		}
	}
	f := Finals{NotFound: !acked}
	for _, op := range ops {
		if op.Kind == Get || (acked && op.Return < lastAckCall) {
			continue // a read, or a write some acknowledged write followed
		}
		if op.Kind == Delete {
			f.NotFound = true
		} else {
			f.Values = append(f.Values, op.Value)
		}
	}
	return f
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
		if _, ok := finals[op.Key]; ok && op.Kind != Get {
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
