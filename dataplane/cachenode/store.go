package cachenode

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unsafe"
)

// entry is one cached key. Its fields are guarded by the lock of the store
// shard that holds it. value is immutable once stored: an update replaces the
// slice, so a reader may keep using a value after releasing the lock.
type entry struct {
	value    []byte
	version  uint64 // coherence version (see the package documentation)
	shim     int32  // the global index of the key's storage shard (shimlease.go)
	valid    bool
	fetching bool // a FETCH for this entry is outstanding
	// missing says the valid copy is of a key storage does not hold: a
	// hit answers StatusNotFound (a negative entry, coherent as any
	// other: a write of the key invalidates it first).
	missing bool
}

// entryState is what a lookup found.
type entryState uint8

const (
	stateAbsent entryState = iota // no entry
	stateInvalid
	stateValid
	stateMissing // a valid negative entry: the key is not in storage
)

// storeShards is the number of independently locked parts of the store.
const storeShards = 64

// store is the cache: a sharded map from key to entry. Items and bytes are
// totals over all shards; bytes counts value bytes and is bounded by
// maxBytes through reserve.
type store struct {
	seed     maphash.Seed
	maxBytes int64
	items    atomic.Int64
	bytes    atomic.Int64
	shards   [storeShards]storeShard

	perShimMu sync.Mutex      // guards perShim
	perShim   map[int32]int32 // entries by storage shard (entry.shim), none at 0
}

type storeShard struct {
	mu sync.RWMutex // guards m and the fields of its entries
	m  map[string]*entry
	_  [32]byte // pad to 64 bytes: shards on separate cache lines
}

func newStore(maxBytes int64) *store {
	s := &store{seed: maphash.MakeSeed(), maxBytes: maxBytes, perShim: map[int32]int32{}}
	for i := range s.shards {
		s.shards[i].m = make(map[string]*entry)
	}
	return s
}

// bytesView returns b as a string without copying. The string must not be
// kept beyond the life of b's contents: it is only passed to lookups and to
// functions that copy what they keep (hotkey.Detector.RecordMiss/RecordHit,
// partmap.Placement.Owner).
func bytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (s *store) shard(key string) *storeShard {
	return &s.shards[maphash.String(s.seed, key)%storeShards]
}

// lookup returns the state of key and, for a valid entry, its value,
// version and storage shard. It does not allocate.
func (s *store) lookup(key []byte) (value []byte, version uint64, shim int32, st entryState) {
	sh := s.shard(bytesView(key))
	sh.mu.RLock()
	e := sh.m[string(key)]
	switch {
	case e == nil:
		st = stateAbsent
	case e.valid && e.missing:
		version, shim, st = e.version, e.shim, stateMissing
	case e.valid:
		value, version, shim, st = e.value, e.version, e.shim, stateValid
	default:
		st = stateInvalid
	}
	sh.mu.RUnlock()
	return value, version, shim, st
}

// countShim adds delta to shim's entries.
func (s *store) countShim(shim int32, delta int32) {
	s.perShimMu.Lock()
	defer s.perShimMu.Unlock()
	if n := s.perShim[shim] + delta; n > 0 {
		s.perShim[shim] = n
	} else {
		delete(s.perShim, shim)
	}
}

// shims appends the storage shards that have entries to dst.
func (s *store) shims(dst []int32) []int32 {
	s.perShimMu.Lock()
	defer s.perShimMu.Unlock()
	for shim := range s.perShim {
		dst = append(dst, shim)
	}
	return dst
}

// holds reports whether key has an entry, valid or not. It does not
// allocate.
func (s *store) holds(key []byte) bool {
	sh := s.shard(bytesView(key))
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.m[string(key)] != nil
}

// snapshot returns a copy of key's entry.
func (s *store) snapshot(key string) (entry, bool) {
	sh := s.shard(key)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	e := sh.m[key]
	if e == nil {
		return entry{}, false
	}
	return *e, true
}

// addPlaceholder adds an invalid entry of version 0 for key, of storage
// shard shim, with a FETCH outstanding, unless key is present.
func (s *store) addPlaceholder(key string, shim int32) (*entry, bool) {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.m[key] != nil {
		return nil, false
	}
	e := &entry{fetching: true, shim: shim}
	sh.m[key] = e
	s.items.Add(1)
	s.countShim(shim, 1)
	return e, true
}

// remove deletes key's entry, whatever it is.
func (s *store) remove(key string) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[key]
	if e == nil {
		return false
	}
	s.deleteLocked(sh, key, e)
	return true
}

// deleteLocked removes e, key's entry, from sh (locked).
func (s *store) deleteLocked(sh *storeShard, key string, e *entry) {
	delete(sh.m, key)
	s.items.Add(-1)
	s.bytes.Add(-int64(len(e.value)))
	s.countShim(e.shim, -1)
}

// removeIf deletes key's entry iff it is e and still invalid, and clears
// e.fetching in any case.
func (s *store) removeIf(key string, e *entry) bool {
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e.fetching = false
	if sh.m[key] != e || e.valid {
		return false
	}
	s.deleteLocked(sh, key, e)
	return true
}

// reserve accounts delta more value bytes if the total stays within
// maxBytes (a negative delta always succeeds).
func (s *store) reserve(delta int64) bool {
	for {
		cur := s.bytes.Load()
		if delta > 0 && cur+delta > s.maxBytes {
			return false
		}
		if s.bytes.CompareAndSwap(cur, cur+delta) {
			return true
		}
	}
}

// dropIf removes every entry whose key satisfies drop (every entry when drop
// is nil) and returns the removed keys.
func (s *store) dropIf(drop func(key string) bool) []string {
	var out []string
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if drop == nil || drop(k) {
				s.deleteLocked(sh, k, e)
				out = append(out, k)
			}
		}
		sh.mu.Unlock()
	}
	return out
}

// refreshable is an invalid entry to fetch again.
type refreshable struct {
	key string
	e   *entry
}

// stale marks every invalid entry without an outstanding FETCH as fetching
// and returns them, for keys that owned accepts.
func (s *store) stale(owned func(key string) bool) []refreshable {
	var out []refreshable
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if !e.valid && !e.fetching && owned(k) {
				e.fetching = true
				out = append(out, refreshable{k, e})
			}
		}
		sh.mu.Unlock()
	}
	return out
}
