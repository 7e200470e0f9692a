package history

import (
	"slices"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
)

// StateClient is the Client of the operation Check puts before a segment
// of a key's history to set the state it starts in (see segment); no
// client of the store has this identifier.
const StateClient = -1

// minSegment is the fewest operations a segment has before it can end:
// each segment costs a search of its own, so tiny ones cost more than they
// save.
const minSegment = 256

// segment is a run of one key's operations between two cuts, after a write
// (by StateClient) of the state the run starts in, if that is not the
// register's initial state.
//
// A cut is a quiescent point (an instant when none of the key's operations
// is in flight) at which the state is known: before it, one write is the
// last one (no other write was called after it returned), or all that may
// be last leave the same state (deletes, say; an acknowledged increment
// leaves the sum it returned, whatever the state before it). Every
// operation before a quiescent point returned before every operation after
// it was called, so every linearization orders them that way, and at a cut
// every linearization leaves the same state: a key's history is
// linearizable iff each segment is, starting in the state the previous one
// leaves. Checking segment by segment keeps porcupine's search, and its
// cache, whose entries grow with the length of the history searched, to
// one segment at a time.
type segment struct {
	ops    []Operation // the start operation, if any, then the run's own
	start  int         // the number of start operations in ops (0 or 1)
	offset int         // the index of the run's first operation in the key's history
}

// run is the segment's own operations.
func (s segment) run() []Operation { return s.ops[s.start:] }

// closedPrefix returns the start operation and the first n of seg's own
// operations, followed by the later writes those n operations may have
// read from, directly or through later increments (an increment reads the
// value it adds to): see reads. Every read of a closed part of a history
// keeps, in the restriction of a linearization of the history, the write
// it read from, so a closed part of a linearizable history is
// linearizable; a prefix without those writes need not be.
func (s segment) closedPrefix(n int) []Operation {
	run := s.run()
	r := newReads()
	for _, op := range run[:n] {
		r.add(op)
	}
	later := run[n:]
	in := make([]bool, len(later))
	for grew := true; grew; { // until no write joins: increments read too
		grew = false
		for i, op := range later {
			if !in[i] && mayWrite(op) && r.from(op) {
				in[i], grew = true, true
				r.add(op)
			}
		}
	}
	out := slices.Clone(s.ops[:s.start+n])
	for i, op := range later {
		if in[i] {
			out = append(out, op)
		}
	}
	return out
}

// reads is what some operations observed, to find the writes they may
// have read from (see from). The values of puts are unique, but an
// increment may leave the value of a put or of another increment.
type reads struct {
	values  map[string]int64 // the latest return of a read of each value
	missed  int64            // the latest return of a read that may have found nothing
	found   int64            // the latest return of a read that found a value
	refused int64            // the latest return of a refused increment (it found a value that is not an integer)
	// unknown reports that an increment of unknown outcome is among the
	// operations: it may have read any write a read of a value could
	// still have followed.
	unknown bool
}

func newReads() *reads { return &reads{values: map[string]int64{}, missed: -1, found: -1, refused: -1} }

// read notes a read of value v that returned at ret.
func (r *reads) read(v string, ret int64) {
	if last, ok := r.values[v]; !ok || ret > last {
		r.values[v] = ret
	}
	r.found = max(r.found, ret)
}

// of reports whether a read of the value w leaves returned after w's call
// (at its call at the earliest: porcupine takes operations that touch as
// concurrent).
func (r *reads) of(w Operation) bool {
	last, ok := r.values[w.Value]
	return ok && w.Call <= last
}

// add notes what op read: a get, the value it found or nothing; an
// acknowledged increment, the value it added to (or nothing, when its sum
// is what it added); a refused one, some value that is not an integer; one
// of unknown outcome, whatever was there.
func (r *reads) add(op Operation) {
	switch {
	case op.Kind == Get && op.Found:
		r.read(op.Value, op.Return)
	case op.Kind == Get:
		r.missed = max(r.missed, op.Return)
	case op.Kind != Incr: // a put or a delete reads nothing
	case op.OutcomeUnknown():
		r.unknown = true
	case !op.Found:
		r.refused = max(r.refused, op.Return)
		r.found = max(r.found, op.Return)
	default:
		before, ok := addend(op)
		if !ok {
			return // a sum no increment returns: it fails whatever it read
		}
		r.read(strconv.FormatInt(before, 10), op.Return)
		if before == 0 {
			r.missed = max(r.missed, op.Return)
		}
	}
}

// from reports whether the reads may have read from the write w (called
// before the read returned): a put or an acknowledged increment that
// leaves a value read, a delete called
// before a read that may have found nothing returned, a put of a value
// that is not an integer called before a refused increment returned, or an
// increment of unknown outcome called before a read of a value returned
// (applied or not, it may be the last write before that read). If an
// increment of unknown outcome is among the operations, a read of a value
// may have read it, and it any write called before that read returned (it
// precedes both in a linearization); if none did, it may be linearized
// after every other operation, where it is legal and changes nothing read.
func (r *reads) from(w Operation) bool {
	switch {
	case r.unknown && w.Call <= r.found:
		return true
	case w.Kind == Delete:
		return w.Call <= r.missed
	case w.Kind == Put:
		_, integer := parseInteger(w.Value)
		return r.of(w) || (!integer && w.Call <= r.refused)
	case w.OutcomeUnknown():
		return w.Call <= r.found
	}
	return r.of(w)
}

// segments splits ops (one key's, sorted by call time) at cuts into
// segments of at least minLen operations (the last one may be shorter). A
// write of unknown outcome never returns, so nothing after its call is
// split.
func segments(ops []Operation, minLen int) []segment {
	var (
		out   []segment
		state register // the state the current run starts in
		first int      // the current run's first operation
		end   int64    // the latest return in ops[first:i]
		// mayBeLast are the writes of ops[first:i] no other write of it
		// was called after the return of.
		mayBeLast []Operation
	)
	for i, op := range ops {
		if i-first >= minLen && op.Call > end {
			if left, known := leftBy(mayBeLast, state); known {
				out = append(out, startingIn(state, ops[first:i], first))
				state, first, end, mayBeLast = left, i, 0, mayBeLast[:0]
			}
		}
		end = max(end, op.Return)
		if mayWrite(op) {
			mayBeLast = slices.DeleteFunc(mayBeLast, func(w Operation) bool { return w.Return < op.Call })
			mayBeLast = append(mayBeLast, op)
		}
	}
	if first < len(ops) {
		out = append(out, startingIn(state, ops[first:], first))
	}
	return out
}

// leftBy returns the state a run whose writes that may be last are
// mayBeLast leaves, and whether it is known: it is if they all leave the
// same known state, or if there are none (the run leaves the state it
// started in, start).
func leftBy(mayBeLast []Operation, start register) (register, bool) {
	if len(mayBeLast) == 0 {
		return start, true
	}
	left, known := leaves(mayBeLast[0])
	for _, w := range mayBeLast[1:] {
		if l, ok := leaves(w); !ok || l != left {
			return register{}, false
		}
	}
	return left, known
}

// leaves is the state the write w leaves whatever the state before it, and
// whether that is known: an acknowledged increment leaves the sum it
// returned; one of unknown outcome, a state that depends on the one before.
func leaves(w Operation) (register, bool) {
	switch {
	case w.Kind == Incr && w.OutcomeUnknown():
		return register{}, false
	case w.Kind == Incr:
		return register{value: w.Value, found: true}, true
	}
	_, s := step(register{}, w)
	return s, true
}

// startingIn returns run as a segment starting in state: after a write of
// state, returning before run's first call, unless state is the register's
// initial one.
func startingIn(state register, run []Operation, offset int) segment {
	if state == (register{}) {
		return segment{ops: run, offset: offset}
	}
	at := run[0].Call
	w := Operation{Client: StateClient, Kind: Delete, Key: run[0].Key, Call: at - 2, Return: at - 1}
	if state.found {
		w.Kind, w.Value = Put, state.value
	}
	return segment{ops: append([]Operation{w}, run...), start: 1, offset: offset}
}

// checkSegments checks ops (one key's, sorted by call time) segment by
// segment. Unless the result is porcupine.Ok, the segment returned is the
// one that failed or was not decided.
func checkSegments(ops []Operation, deadline time.Time) (porcupine.CheckResult, segment) {
	for _, seg := range segments(ops, minSegment) {
		if res := checkBy(seg.ops, deadline); res != porcupine.Ok {
			return res, seg
		}
	}
	return porcupine.Ok, segment{}
}
