package e2e

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// kvInput is one operation on a key.
type kvInput struct {
	op    string // "get", "put" or "del"
	key   string
	value string // put only
}

// kvOutput is what a get observed.
type kvOutput struct {
	value string
	found bool
}

// kvState is a key's value in the sequential specification.
type kvState struct {
	value string
	found bool
}

// kvModel is a linearizable register per key (deletes included).
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).key
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
	},
	Init: func() any { return kvState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(kvState), input.(kvInput)
		switch in.op {
		case "put":
			return true, kvState{value: in.value, found: true}
		case "del":
			return true, kvState{}
		default:
			out := output.(kvOutput)
			return out == kvOutput(s), s
		}
	},
	DescribeOperation: func(input, output any) string {
		in := input.(kvInput)
		if in.op == "get" {
			out := output.(kvOutput)
			return fmt.Sprintf("get(%s) -> %q found=%v", in.key, out.value, out.found)
		}
		return fmt.Sprintf("%s(%s, %q)", in.op, in.key, in.value)
	},
}

// history records operations from many goroutines.
type history struct {
	start time.Time

	mu  sync.Mutex // guards ops
	ops []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return int64(time.Since(h.start)) }

// add records an operation that ran from call to ret (see the outcome
// rules in record).
func (h *history) add(client int, in kvInput, out kvOutput, call, ret int64) {
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
	h.mu.Unlock()
}

// unknown is the return time of a write whose outcome is unknown: it may
// take effect at any point after its call.
const unknown = math.MaxInt64

func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}
