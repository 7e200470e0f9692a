package history

import (
	"slices"
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
// be last are deletes. Every operation before a quiescent point returned
// before every operation after it was called, so every linearization
// orders them that way, and at a cut every linearization leaves the same
// state: a key's history is linearizable iff each segment is, starting in
// the state the previous one leaves. Checking segment by segment keeps
// porcupine's search, and its cache, whose entries grow with the length of
// the history searched, to one segment at a time.
type segment struct {
	ops    []Operation // the start operation, if any, then the run's own
	start  int         // the number of start operations in ops (0 or 1)
	offset int         // the index of the run's first operation in the key's history
}

// run is the segment's own operations.
func (s segment) run() []Operation { return s.ops[s.start:] }

// closedPrefix returns the start operation and the first n of seg's own
// operations, followed by its later writes those n operations' reads may
// have read from: the put of each value they returned and, for a read that
// found nothing, every delete called before it returned. Every read of a
// closed part of a history keeps, in the restriction of a linearization of
// the history, the write it read from, so a closed part of a linearizable
// history is linearizable; a prefix without those writes need not be.
func (s segment) closedPrefix(n int) []Operation {
	run := s.run()
	readValues := map[string]bool{}
	var lastMiss int64 = -1 // the latest return of a read that found nothing
	for _, op := range run[:n] {
		switch {
		case op.Kind != Get:
		case op.Found:
			readValues[op.Value] = true
		default:
			lastMiss = max(lastMiss, op.Return)
		}
	}
	out := slices.Clone(s.ops[:s.start+n])
	for _, op := range run[n:] {
		if (op.Kind == Put && readValues[op.Value]) || (op.Kind == Delete && op.Call < lastMiss) {
			out = append(out, op)
		}
	}
	return out
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
		if op.Kind != Get {
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
// same state, or if there are none (the run leaves the state it started
// in, start).
func leftBy(mayBeLast []Operation, start register) (register, bool) {
	if len(mayBeLast) == 0 {
		return start, true
	}
	left := leaves(mayBeLast[0])
	for _, w := range mayBeLast[1:] {
		if leaves(w) != left {
			return register{}, false
		}
	}
	return left, true
}

// leaves is the state the write w leaves (whatever the state before it).
func leaves(w Operation) register {
	_, s := step(register{}, w)
	return s
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
