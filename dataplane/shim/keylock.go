package shim

import (
	"context"
	"fmt"
	"sync"
)

// keyLocks serialises the writes and fills of each key (DistCache §4.3: a
// key's versions are assigned, invalidated and written in one order) without
// making one key's waiters block any other key. A key's lock exists only
// while someone holds or waits for it.
type keyLocks struct {
	mu    sync.Mutex          // guards locks and every keyLock.refs
	locks map[string]*keyLock // keys held or waited for
}

// keyLock is one key's lock: holding it means owning the token in held.
type keyLock struct {
	held chan struct{} // capacity 1; a token in it means the lock is held
	refs int           // holders and waiters; the entry goes at zero
}

func newKeyLocks() *keyLocks { return &keyLocks{locks: make(map[string]*keyLock)} }

// lock waits until it holds key's lock or ctx ends, and returns the
// function that releases it.
func (k *keyLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	k.mu.Lock()
	l := k.locks[key]
	if l == nil {
		l = &keyLock{held: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	select {
	case l.held <- struct{}{}:
		return func() { <-l.held; k.release(key, l) }, nil
	case <-ctx.Done():
		k.release(key, l)
		return nil, fmt.Errorf("cannot lock key %q: %w", key, ctx.Err())
	}
}

// tryLock takes key's lock if nobody holds it or waits for it, and returns
// the function that releases it; ok is false otherwise.
func (k *keyLocks) tryLock(key string) (unlock func(), ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.locks[key] != nil {
		return nil, false
	}
	l := &keyLock{held: make(chan struct{}, 1), refs: 1}
	l.held <- struct{}{}
	k.locks[key] = l
	return func() { <-l.held; k.release(key, l) }, true
}

// release drops one reference to l.
func (k *keyLocks) release(key string, l *keyLock) {
	k.mu.Lock()
	if l.refs--; l.refs == 0 {
		delete(k.locks, key)
	}
	k.mu.Unlock()
}

// waiters is the number of requests holding or waiting for key's lock.
func (k *keyLocks) waiters(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l := k.locks[key]; l != nil {
		return l.refs
	}
	return 0
}

// len is the number of keys locked or waited for.
func (k *keyLocks) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.locks)
}
