package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/distcache/distcache/client"
)

// ledger remembers, per written key, which values the key may hold: the
// value of the last acknowledged write and those of the writes whose outcome
// is unknown. It serialises the writes of a key.
type ledger struct {
	mu   sync.Mutex // guards keys (not the entries' fields)
	keys map[string]*entry
}

// entry is one key's record.
type entry struct {
	// busy holds a token while a write of the key is in flight, so at most
	// one is (a channel, so that waiting for it can time out).
	busy chan struct{}

	mu       sync.Mutex // guards the fields below
	acked    []byte     // the last acknowledged value; nil if none
	unknown  [][]byte   // values of writes whose outcome is unknown
	attempts int        // writes started
}

// errKeyBusy fails a write that could not start before its context ended
// because the key's previous write was still in flight; nothing was sent.
var errKeyBusy = errors.New("the key's previous write is still in flight")

func newLedger() *ledger { return &ledger{keys: map[string]*entry{}} }

// entry returns key's record, creating it.
func (l *ledger) entry(key string) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.keys[key]
	if !ok {
		e = &entry{busy: make(chan struct{}, 1)}
		l.keys[key] = e
	}
	return e
}

// acknowledged returns the keys with an acknowledged write, sorted: the
// keys that can lose one.
func (l *ledger) acknowledged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.keys))
	for k, e := range l.keys {
		e.mu.Lock()
		if e.acked != nil {
			out = append(out, k)
		}
		e.mu.Unlock()
	}
	slices.Sort(out)
	return out
}

// write runs put (a write of v) once no other write of key is in flight,
// and records its outcome. If ctx ends first it fails with errKeyBusy
// without calling put.
func (l *ledger) write(ctx context.Context, key string, v []byte, put func() error) error {
	e := l.entry(key)
	select {
	case e.busy <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("cannot put %q: %w", key, errKeyBusy)
	}
	defer func() { <-e.busy }()
	err := put()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.attempts++
	switch outcome(err) {
	case applied:
		e.acked = v
	case unknownOutcome:
		e.unknown = append(e.unknown, v)
	case notApplied:
	}
	return err
}

// writeOutcome is what a write's error says about its effect.
type writeOutcome int

const (
	applied        writeOutcome = iota
	notApplied                  // refused: nothing written
	unknownOutcome              // may have been written, now or later
)

// outcome classifies a Put's error. Only explicit refusals by the shim (or
// by the client before sending) are known not to have written anything;
// anything else (no reply, Redis failed, internal error) may have, and the
// shim may even apply a write that got no reply after a later one.
func outcome(err error) writeOutcome {
	switch {
	case err == nil:
		return applied
	case errors.Is(err, client.ErrCoherence), errors.Is(err, client.ErrTooLarge),
		errors.Is(err, client.ErrInvalidKey), errors.Is(err, client.ErrNoRoute),
		errors.Is(err, client.ErrOverloaded), errors.Is(err, client.ErrNotOwner):
		return notApplied
	default:
		return unknownOutcome
	}
}

// accepts reports whether the key may hold got (found false: the key is
// absent): the last acknowledged value, or one whose outcome is unknown.
// Without an acknowledged write nothing can be lost (and the key's content
// before the driver's writes is unknown), so anything is accepted.
func (e *entry) accepts(got []byte, found bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.acked == nil {
		return true
	}
	if !found {
		return false
	}
	if bytes.Equal(got, e.acked) {
		return true
	}
	return slices.ContainsFunc(e.unknown, func(v []byte) bool { return bytes.Equal(got, v) })
}

// lost describes a value e does not accept.
func (e *entry) lost(key string, got []byte, found bool, source string) LostWrite {
	e.mu.Lock()
	defer e.mu.Unlock()
	lw := LostWrite{Key: key, Want: describe(e.acked), Got: notFoundText, Unknown: len(e.unknown), Source: source}
	if found {
		lw.Got = describe(got)
	}
	return lw
}

// notFoundText stands for an absent key in LostWrite.Got.
const notFoundText = "(not found)"

// valueSep separates the fields of a value's header.
const valueSep = '|'

// value returns the unique value of write seq of key in mode: the header
// "mode|key|seq|" padded with '.' to size bytes.
func value(mode Mode, key string, seq uint64, size int) []byte {
	v := make([]byte, 0, max(size, len(mode)+len(key)+24))
	v = append(v, mode...)
	v = append(v, valueSep)
	v = append(v, key...)
	v = append(v, valueSep)
	v = strconv.AppendUint(v, seq, 10)
	v = append(v, valueSep)
	for len(v) < size {
		v = append(v, '.')
	}
	return v
}

// maxDescribed bounds the bytes of a foreign value shown in a LostWrite.
const maxDescribed = 64

// describe shortens a value for a report: a driver's value to its header
// without the padding, anything else to its first maxDescribed bytes.
func describe(v []byte) string {
	if v == nil {
		return ""
	}
	if i := bytes.LastIndexByte(v, valueSep); i > 0 && bytes.Count(v, []byte{valueSep}) >= 3 {
		return string(v[:i])
	}
	if len(v) > maxDescribed {
		return strconv.Quote(string(v[:maxDescribed])) + "…"
	}
	return strconv.Quote(string(v))
}
