// Package history records the operations clients run on a key-value store
// and checks what they observed: per key, that the history is linearizable
// (with porcupine, against a register with deletes and increments), and
// that the value a key holds once every operation has ended is one its
// writes could have left (no acknowledged write lost).
//
// # Operations and unknown outcomes
//
// An Operation is a get, put, delete or increment of one key by one client,
// with its call and return times in nanoseconds since the Recorder
// started. Values must be unique per put, so a read names the put it
// observed, unless an increment left that value too. An increment is
// Redis's INCRBY: it adds Delta to the key's value read as a decimal
// integer (0 for a missing key) and returns the sum, which it leaves; on a
// value that is not an integer, or when the sum overflows, the store
// refuses it and the value stays (recorded as an acknowledged increment
// that did not apply, it is a read of such a value). A write that got no
// answer (a timeout, a lost reply, a failed storage call) may or may not
// have been applied, and may still be applied later: it is recorded with
// Return == Unknown, so it can be linearized at any point after its call,
// or never — after every other operation, where an increment of unknown
// outcome is always legal (applied if it can be) and changes nothing any
// read saw. Any other write the store refused and guarantees it did not
// apply is not an operation and is not recorded.
//
// # Linearizability
//
// Check partitions a history by key and checks every key on its own within
// a time bound. A key's result is one of: linearizable; a violation, with
// the shortest prefix of its history (by call time) that is already not
// linearizable, taken together with the later writes its reads may have
// read from (a read may return the value of a put called after it, and a
// prefix without that put proves nothing, nor one without the increments
// that led up to a value read), whose last operation is where it goes
// wrong (for an increment that returned a wrong sum, that may be an
// operation overlapping it that read the sum it did leave; with increments
// of unknown outcome about, one a little before it, whose prefix holds
// it), and porcupine's visualization of it; or unchecked, when porcupine
// did not decide in time, which is never a pass.
//
// Writes of unknown outcome are simplified first, without changing the
// verdict (an acknowledged increment counts as a read of the value it
// added to): a put whose value no read returned is left out (it can always
// be linearized after every other operation, where it changes nothing any
// read saw); a put whose value a read returned ends at that read's return,
// unless an increment returned that value too; a delete no read that
// returned after its call may have seen as "not found" is left out. On a
// key with an increment of unknown outcome (which may carry a value on to
// a read unseen) or a refused one, puts and deletes of unknown outcome are
// kept as they are. The deletes and increments of unknown outcome left are
// left out on a first try, a key being checked with them only if it is not
// linearizable without them.
//
// Each key's history is then cut into segments (see segment) at instants
// when no operation is in flight and one state is possible (an
// acknowledged increment leaves the sum it returned), and porcupine
// searches each segment on its own, starting in the state the previous one
// left: its memory grows with the length of the history it searches.
//
// # Lost writes
//
// PossibleFinals computes, from one key's history, the values the key may
// hold once every operation has ended. A write w could be the last one
// unless some acknowledged write started after w returned; a write whose
// outcome is unknown may be last or may never have been applied; "not
// found" is possible when a delete could be last, or when no write was
// acknowledged. Increments of unknown outcome may each have been applied
// after the last write, or not: what they may add up to is a range, added
// to an integer final value (or to 0, for a missing key). LostWrites
// compares final reads against that set.
package history
