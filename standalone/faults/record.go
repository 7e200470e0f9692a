package faults

import (
	"slices"
	"sync"
	"time"
)

// Record is one injected fault.
type Record struct {
	// Kind is the fault class (kill-node, partition-two-way, …).
	Kind string `json:"kind"`
	// Targets name what the fault hit: processes, flows, the clients.
	Targets []string `json:"targets"`
	// Detail says how (a probability, a delay, a signal).
	Detail string `json:"detail,omitempty"`
	// Start and End are when it was injected and healed (End is zero while
	// it lasts; equal to Start for an instant fault such as a kill).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Err is why injecting or healing it failed, if it did.
	Err string `json:"error,omitempty"`
}

// Duration is how long the fault lasted (0 while it lasts).
func (r Record) Duration() time.Duration {
	if r.End.IsZero() {
		return 0
	}
	return r.End.Sub(r.Start)
}

// Recorder keeps the record of every fault injected. It is safe for
// concurrent use.
type Recorder struct {
	now func() time.Time

	mu      sync.Mutex // guards records
	records []Record
}

// NewRecorder returns an empty recorder; now is its clock (nil:
// time.Now).
func NewRecorder(now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{now: now}
}

// Begin records that a fault starts now and returns the function that
// records its end (with the error of healing it, if any).
func (r *Recorder) Begin(kind, detail string, targets ...string) (end func(error)) {
	r.mu.Lock()
	i := len(r.records)
	r.records = append(r.records, Record{Kind: kind, Detail: detail, Targets: slices.Clone(targets), Start: r.now()})
	r.mu.Unlock()
	return func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.records[i].End = r.now()
		if err != nil {
			r.records[i].Err = joinErr(r.records[i].Err, err.Error())
		}
	}
}

// Fail records that injecting a fault failed: err is kept with its record.
func (r *Recorder) Fail(kind, detail string, err error, targets ...string) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, Record{
		Kind: kind, Detail: detail, Targets: slices.Clone(targets), Start: now, End: now, Err: err.Error(),
	})
}

// Records returns the faults recorded so far, in the order they began.
func (r *Recorder) Records() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records)
}

// Open returns the faults that have begun and not ended.
func (r *Recorder) Open() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var open []Record
	for _, rec := range r.records {
		if rec.End.IsZero() {
			open = append(open, rec)
		}
	}
	return open
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
