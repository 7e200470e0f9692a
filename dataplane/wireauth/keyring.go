package wireauth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/distcache/distcache/internal/periodic"
)

const (
	// TagLen is the length of a tag: HMAC-SHA256 truncated to 128 bits
	// (the wire package's TagLen).
	TagLen = 16
	// MinKeyLen is the shortest key accepted.
	MinKeyLen = 16
	// CurrentFile names the key that signs, in a key directory.
	CurrentFile = "current"
	// PreviousFile names the key that is accepted as well, in a key
	// directory.
	PreviousFile = "previous"
	// DefaultPoll is how often Watch reads the key directory.
	DefaultPoll = time.Second
)

// ErrKey is wrapped by every error about a key's contents.
var ErrKey = errors.New("bad data-plane key")

// Stats counts a Keyring's work.
type Stats struct {
	Reloads    uint64 // key changes installed after the first
	LoadErrors uint64 // reads of the key directory that failed (the keys in use were kept)
}

// Keyring signs with its current key and accepts the current or the
// previous key. The zero value is not usable: see New and Load.
type Keyring struct {
	keys       atomic.Pointer[keySet] // the keys in use, replaced whole by Set
	reloads    atomic.Uint64
	loadErrors atomic.Uint64
	changed    chan struct{} // buffered 1: Watch installed new keys
}

type keySet struct {
	current, previous *key // previous is nil when there is none
}

// key is one key and a pool of HMAC states keyed with it.
type key struct {
	raw  []byte
	macs sync.Pool // *macState
}

type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
}

func newKey(raw []byte) (*key, error) {
	if len(raw) < MinKeyLen {
		return nil, fmt.Errorf("cannot use key: %w: %d bytes, need at least %d", ErrKey, len(raw), MinKeyLen)
	}
	k := &key{raw: bytes.Clone(raw)}
	k.macs.New = func() any { return &macState{h: hmac.New(sha256.New, k.raw)} }
	return k, nil
}

// tag computes the tag of data into the state's buffer; the caller
// returns the state to the pool when it is done with the result.
func (k *key) tag(data []byte) (*macState, []byte) {
	s := k.macs.Get().(*macState)
	s.h.Reset()
	s.h.Write(data)
	return s, s.h.Sum(s.sum[:0])[:TagLen]
}

func (k *key) appendTag(dst, data []byte) []byte {
	s, t := k.tag(data)
	dst = append(dst, t...)
	k.macs.Put(s)
	return dst
}

func (k *key) verify(data, tag []byte) bool {
	s, t := k.tag(data)
	ok := hmac.Equal(t, tag)
	k.macs.Put(s)
	return ok
}

// New returns a Keyring that signs with current and also accepts previous
// (nil or empty: no previous key).
func New(current, previous []byte) (*Keyring, error) {
	k := &Keyring{changed: make(chan struct{}, 1)}
	if err := k.Set(current, previous); err != nil {
		return nil, err
	}
	return k, nil
}

// Set replaces the keys; a failed Set keeps the keys in use.
func (k *Keyring) Set(current, previous []byte) error {
	ks := &keySet{}
	var err error
	if ks.current, err = newKey(current); err != nil {
		return err
	}
	if len(previous) > 0 {
		if ks.previous, err = newKey(previous); err != nil {
			return err
		}
	}
	k.keys.Store(ks)
	return nil
}

// AppendTag appends the tag of datagram under the current key to dst
// (wire.Signer).
func (k *Keyring) AppendTag(dst, datagram []byte) []byte {
	return k.keys.Load().current.appendTag(dst, datagram)
}

// Verify reports whether tag is data's tag under the current or the
// previous key, comparing in constant time.
func (k *Keyring) Verify(data, tag []byte) bool {
	if len(tag) != TagLen {
		return false
	}
	ks := k.keys.Load()
	return ks.current.verify(data, tag) || (ks.previous != nil && ks.previous.verify(data, tag))
}

// Changed receives after Watch installed new keys (several changes may
// be reported as one).
func (k *Keyring) Changed() <-chan struct{} { return k.changed }

// Stats returns the counters.
func (k *Keyring) Stats() Stats {
	return Stats{Reloads: k.reloads.Load(), LoadErrors: k.loadErrors.Load()}
}

// readDir reads the current and, if present, the previous key of dir.
func readDir(dir string) (current, previous []byte, err error) {
	current, err = os.ReadFile(filepath.Join(dir, CurrentFile))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read data-plane key: %w", err)
	}
	previous, err = os.ReadFile(filepath.Join(dir, PreviousFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("cannot read previous data-plane key: %w", err)
	}
	return current, previous, nil
}

// Load returns a Keyring with the keys of directory dir.
func Load(dir string) (*Keyring, error) {
	cur, prev, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	k, err := New(cur, prev)
	if err != nil {
		return nil, fmt.Errorf("cannot load data-plane keys from %s: %w", dir, err)
	}
	return k, nil
}

// Reload reads dir again and installs its keys if they changed; it
// reports whether they did. On error the keys in use are kept.
func (k *Keyring) Reload(dir string) (bool, error) {
	cur, prev, err := readDir(dir)
	if err != nil {
		k.loadErrors.Add(1)
		return false, err
	}
	ks := k.keys.Load()
	if bytes.Equal(cur, ks.current.raw) && (ks.previous == nil && len(prev) == 0 || ks.previous != nil && bytes.Equal(prev, ks.previous.raw)) {
		return false, nil
	}
	if err := k.Set(cur, prev); err != nil {
		k.loadErrors.Add(1)
		return false, fmt.Errorf("cannot reload data-plane keys from %s: %w", dir, err)
	}
	k.reloads.Add(1)
	return true, nil
}

// Watch reloads dir every interval (DefaultPoll when ≤ 0) until ctx ends.
func (k *Keyring) Watch(ctx context.Context, dir string, interval time.Duration, log *slog.Logger) {
	if interval <= 0 {
		interval = DefaultPoll
	}
	periodic.Run(ctx, interval, func(context.Context) bool {
		switch changed, err := k.Reload(dir); {
		case err != nil:
			log.Warn("keeping the data-plane keys in use", "dir", dir, "err", err)
		case changed:
			log.Info("data-plane keys changed", "dir", dir, "previous_key", k.keys.Load().previous != nil)
			select {
			case k.changed <- struct{}{}:
			default:
			}
		}
		return true
	})
}

// Generate writes a new random key (32 bytes, hex-encoded) as the current
// key of directory dir, creating it with owner-only permissions, and
// removes any previous key: standalone mode's per-cluster key.
func Generate(dir string) error {
	raw, err := NewKey()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot generate data-plane key: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CurrentFile), raw, 0o600); err != nil {
		return fmt.Errorf("cannot generate data-plane key: %w", err)
	}
	if err := os.Remove(filepath.Join(dir, PreviousFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot generate data-plane key: %w", err)
	}
	return nil
}

// NewKey returns a new random key as the bytes of a key file (32 random
// bytes, hex-encoded): what the operator puts in a cluster's Secret.
func NewKey() ([]byte, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fmt.Errorf("cannot generate data-plane key: %w", err)
	}
	return []byte(hex.EncodeToString(raw[:])), nil
}
