package history

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/anishathalye/porcupine"
)

// register is one key's state in the sequential specification.
type register struct {
	value string
	found bool
}

// integer is s's value as an increment reads it: 0 for a missing key, the
// value if it is a decimal integer as Redis writes one (no sign but a
// leading '-', no leading zero, within int64), and not ok otherwise.
func (s register) integer() (n int64, ok bool) {
	if !s.found {
		return 0, true
	}
	return parseInteger(s.value)
}

// parseInteger parses v as Redis parses an integer value: only the
// canonical decimal form counts.
func parseInteger(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && strconv.FormatInt(n, 10) == v
}

// add returns a+b, and whether it does not overflow.
func add(a, b int64) (int64, bool) {
	if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
		return 0, false
	}
	return a + b, true
}

// sub returns a-b, and whether it does not overflow.
func sub(a, b int64) (int64, bool) {
	if (b < 0 && a > math.MaxInt64+b) || (b > 0 && a < math.MinInt64+b) {
		return 0, false
	}
	return a - b, true
}

// addend is the value the acknowledged increment op added its Delta to (0
// for a missing key as well), and whether its sum is an integer it can
// have returned.
func addend(op Operation) (int64, bool) {
	sum, ok := parseInteger(op.Value)
	if !ok {
		return 0, false
	}
	return sub(sum, op.Delta)
}

// Model is the sequential specification porcupine checks against: a
// register per key (partitioned by key) that a put sets, a delete clears,
// a get reads and an increment reads and sets (see step). The porcupine
// operations' Input and Output are both the Operation.
var Model = porcupine.Model{
	Partition: partitionByKey,
	Init:      func() any { return register{} },
	Step: func(state, input, _ any) (bool, any) {
		return step(state.(register), input.(Operation))
	},
	DescribeOperation: func(input, _ any) string { return input.(Operation).Describe() },
	DescribeState: func(state any) string {
		s := state.(register)
		if !s.found {
			return "not found"
		}
		return fmt.Sprintf("%q", s.value)
	},
}

// step applies op to s: whether op is legal in state s, and the next state.
//
// An increment applies to a missing key (as 0) or an integer value, unless
// the sum overflows; otherwise the store refuses it and the state is
// unchanged. An acknowledged increment is legal iff it applies and
// returned the sum, a refused one iff it does not apply, and one of
// unknown outcome always is: applied if it can be, a no-op otherwise. Its
// Return being Unknown, porcupine may place it anywhere after its call,
// including after every other operation, where it changes nothing any
// read saw (as if never applied).
func step(s register, op Operation) (bool, register) {
	switch op.Kind {
	case Put:
		return true, register{value: op.Value, found: true}
	case Delete:
		return true, register{}
	case Incr:
		var (
			sum     int64
			applies bool
		)
		if n, ok := s.integer(); ok {
			sum, applies = add(n, op.Delta)
		}
		next := register{value: strconv.FormatInt(sum, 10), found: true}
		switch {
		case !applies:
			return op.OutcomeUnknown() || !op.Found, s
		case op.OutcomeUnknown() || (op.Found && op.Value == next.value):
			return true, next
		}
		return false, s
	default:
		if !op.Found {
			return !s.found, s
		}
		return s.found && s.value == op.Value, s
	}
}

// mayWrite reports whether op may change its key's state: a put, a delete,
// or an increment that was applied or whose outcome is unknown (not a get,
// nor a refused increment).
func mayWrite(op Operation) bool {
	return op.Kind == Put || op.Kind == Delete || (op.Kind == Incr && (op.Found || op.OutcomeUnknown()))
}

// partitionByKey splits a history by key, keys in order of first
// appearance.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range history {
		k := op.Input.(Operation).Key
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

// porcupineOps converts ops to porcupine's representation.
func porcupineOps(ops []Operation) []porcupine.Operation {
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		out[i] = porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: op.Call, Return: op.Return}
	}
	return out
}

// ByKey splits ops by key, each key's operations sorted by call time (then
// return time and client, so the order is deterministic).
func ByKey(ops []Operation) map[string][]Operation {
	out := map[string][]Operation{}
	for _, op := range ops {
		out[op.Key] = append(out[op.Key], op)
	}
	for _, part := range out {
		sort.SliceStable(part, func(i, j int) bool {
			a, b := part[i], part[j]
			if a.Call != b.Call {
				return a.Call < b.Call
			}
			if a.Return != b.Return {
				return a.Return < b.Return
			}
			return a.Client < b.Client
		})
	}
	return out
}
