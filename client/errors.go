package client

import (
	"errors"

	"github.com/distcache/distcache/dataplane/wire"
)

// Errors returned (wrapped as "cannot get/put/delete %q: …") by the Client.
// Test them with errors.Is.
var (
	// ErrNotFound: the key does not exist.
	ErrNotFound = errors.New("key not found")
	// ErrUnavailable: the storage backend (Redis) could not be reached.
	ErrUnavailable = errors.New("storage unavailable")
	// ErrCoherence: the shim could not invalidate every cached copy in
	// time and wrote nothing (after the client's automatic retries).
	ErrCoherence = errors.New("coherence timeout, nothing written")
	// ErrOverloaded: the receiver shed the request.
	ErrOverloaded = errors.New("overloaded")
	// ErrNotOwner: the receiver does not own the key under its map.
	ErrNotOwner = errors.New("not the key's owner")
	// ErrTooLarge: the key or value is over the protocol's limits (or an
	// append would make the value so).
	ErrTooLarge = errors.New("key or value too large")
	// ErrNotInteger: an increment found a value that is not a 64-bit
	// integer, or the sum would overflow; nothing was written.
	ErrNotInteger = errors.New("value is not an integer or out of range")
	// ErrWrongType: the key holds a value of another type than a string
	// (a hash, a list...); nothing was read or written.
	ErrWrongType = errors.New("the key holds another type than a string")
	// ErrInternal: the receiver failed otherwise.
	ErrInternal = errors.New("internal error")
	// ErrInvalidKey: the key is empty or longer than wire.MaxKeyLen.
	ErrInvalidKey = errors.New("invalid key")
	// ErrNoRoute: the partition map has no address for the key's shim.
	ErrNoRoute = errors.New("no address for the key's storage shard")
	// ErrOutcomeUnknown is wrapped, together with the context's error, by a
	// write that got no reply before its context ended: it may or may not
	// have been applied.
	ErrOutcomeUnknown = errors.New("outcome unknown")
)

// statusError maps a non-OK reply status to its error.
func statusError(s wire.Status) error {
	switch s {
	case wire.StatusNotFound:
		return ErrNotFound
	case wire.StatusNotOwner:
		return ErrNotOwner
	case wire.StatusUnavailable:
		return ErrUnavailable
	case wire.StatusCoherence:
		return ErrCoherence
	case wire.StatusTooLarge:
		return ErrTooLarge
	case wire.StatusOverloaded:
		return ErrOverloaded
	case wire.StatusInvalid:
		return ErrNotInteger
	case wire.StatusWrongType:
		return ErrWrongType
	default:
		return ErrInternal
	}
}

// checkKey validates a key against the wire limits.
func checkKey(key string) error {
	if len(key) == 0 || len(key) > wire.MaxKeyLen {
		return ErrInvalidKey
	}
	return nil
}
