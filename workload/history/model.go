package history

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// register is one key's state in the sequential specification.
type register struct {
	value string
	found bool
}

// Model is the sequential specification porcupine checks against: a
// register per key (partitioned by key) that a put sets, a delete clears
// and a get reads. The porcupine operations' Input and Output are both the
// Operation.
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
func step(s register, op Operation) (bool, register) {
	switch op.Kind {
	case Put:
		return true, register{value: op.Value, found: true}
	case Delete:
		return true, register{}
	default:
		if !op.Found {
			return !s.found, s
		}
		return s.found && s.value == op.Value, s
	}
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
