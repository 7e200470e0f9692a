package history

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// Kind is what an operation does.
type Kind string

// Kinds of operations.
const (
	Get    Kind = "get"
	Put    Kind = "put"
	Delete Kind = "del"
	// Incr is an INCRBY: it adds Delta to the key's integer value (0 when
	// the key does not exist) and returns the sum.
	Incr Kind = "incr"
)

// Unknown is the Return of a write whose outcome is unknown: it may take
// effect at any point after its call, or never.
const Unknown int64 = math.MaxInt64

// Operation is one operation on one key.
type Operation struct {
	// Client identifies the client (or worker) that ran the operation;
	// operations of one client do not overlap.
	Client int  `json:"client"`
	Kind   Kind `json:"op"`
	// Key is the key operated on.
	Key string `json:"key"`
	// Value is what a put wrote, what a get read when Found, or what an
	// increment returned when Found (the new value, in decimal).
	Value string `json:"value,omitempty"`
	// Found reports that a get found the key, or that an increment was
	// applied. An acknowledged increment that was not is one the store
	// refused (the value is not an integer, or the sum out of range).
	Found bool `json:"found,omitempty"`
	// Delta is what an increment adds.
	Delta int64 `json:"delta,omitempty"`
	// Call and Return are nanoseconds since the recorder's start; Return
	// is Unknown for a write whose outcome is unknown.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
}

// OutcomeUnknown reports whether op is a write whose outcome is unknown.
func (op Operation) OutcomeUnknown() bool { return op.Return == Unknown }

// Describe is op without its client and times, e.g. `put(k, "v")`,
// `get(k) -> "v"` or `incr(k, 1) -> 5` (`incr(k, 1)` when its outcome is
// unknown, `incr(k, 1) -> refused` when the store refused it).
func (op Operation) Describe() string {
	switch op.Kind {
	case Incr:
		switch {
		case op.OutcomeUnknown():
			return fmt.Sprintf("incr(%s, %d)", op.Key, op.Delta)
		case !op.Found:
			return fmt.Sprintf("incr(%s, %d) -> refused", op.Key, op.Delta)
		}
		return fmt.Sprintf("incr(%s, %d) -> %s", op.Key, op.Delta, op.Value)
	case Get:
		if !op.Found {
			return fmt.Sprintf("get(%s) -> not found", op.Key)
		}
		return fmt.Sprintf("get(%s) -> %q", op.Key, op.Value)
	case Put:
		return fmt.Sprintf("put(%s, %q)", op.Key, op.Value)
	default:
		return fmt.Sprintf("%s(%s)", op.Kind, op.Key)
	}
}

// String is op with its client and interval, e.g.
// `client  3 [1.2ms, 1.5ms] put(k, "v")`.
func (op Operation) String() string {
	ret := "unknown"
	if !op.OutcomeUnknown() {
		ret = time.Duration(op.Return).String()
	}
	return fmt.Sprintf("client %2d [%v, %s] %s", op.Client, time.Duration(op.Call), ret, op.Describe())
}

// Recorder collects operations from many goroutines. It is safe for
// concurrent use.
type Recorder struct {
	start time.Time

	mu  sync.Mutex // guards ops
	ops []Operation
}

// NewRecorder returns an empty recorder whose clock starts now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is the time since the recorder started, in nanoseconds (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Add records op.
func (r *Recorder) Add(op Operation) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Len is the number of operations recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Operations returns a copy of the operations recorded so far, in the
// order they were added.
func (r *Recorder) Operations() []Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Operation(nil), r.ops...)
}
