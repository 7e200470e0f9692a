// Package hashing provides the seeded, independent hash functions that the
// placement core uses to partition keys.
//
// DistCache (Liu et al., FAST '19, §3.1) partitions the hot objects of every
// cache layer with a hash function that is independent of the other layers'
// functions: a set of hot keys that collides on one node of a layer is spread
// over many nodes of another layer with high probability. We obtain a family
// of such functions from XXH3 with distinct 64-bit seeds; XXH3 passes SMHasher
// and its seeded variants behave as independent functions for this purpose
// (the package tests check independence with a chi-square test on the joint
// assignment of one million keys).
//
// The wire protocol identifies a key by a 16-byte digest (XXH3-128 with a
// fixed seed) so that a P4 parser can match on a fixed-width field.
package hashing

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// DigestSize is the length in bytes of a key digest.
const DigestSize = 16

// digestSeed is the seed of the wire digest. It is part of the wire format:
// changing it changes every golden packet.
const digestSeed = 0x44697374_43616368 // "DistCach"

// Func is one member of the seeded hash family. The zero value is the
// function with seed 0. Func is a value type and safe for concurrent use.
type Func struct {
	seed uint64
}

// New returns the hash function with the given seed.
func New(seed uint64) Func { return Func{seed: seed} }

// Seed reports the seed of f.
func (f Func) Seed() uint64 { return f.seed }

// String hashes a string key.
func (f Func) String(key string) uint64 { return xxh3.HashStringSeed(key, f.seed) }

// Bytes hashes a byte-slice key; Bytes(b) == String(string(b)).
func (f Func) Bytes(key []byte) uint64 { return xxh3.HashSeed(key, f.seed) }

// Uint64 hashes an integer, for example a member's virtual-node index or a
// key rank. It does not allocate.
func (f Func) Uint64(x uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], x)
	return xxh3.HashSeed(b[:], f.seed)
}

// Derive returns a new seed derived from seed and a label, for components
// that need several independent functions from one configured seed (for
// example the rack and shard levels of the storage placement).
func Derive(seed uint64, label string) uint64 { return xxh3.HashStringSeed(label, seed) }

// Digest is the 16-byte digest of a key carried in every packet header.
type Digest [DigestSize]byte

// DigestOf returns the wire digest of key.
func DigestOf(key []byte) Digest {
	h := xxh3.Hash128Seed(key, digestSeed)
	var d Digest
	binary.BigEndian.PutUint64(d[:8], h.Hi)
	binary.BigEndian.PutUint64(d[8:], h.Lo)
	return d
}

// DigestOfString returns the wire digest of a string key.
func DigestOfString(key string) Digest {
	h := xxh3.HashString128Seed(key, digestSeed)
	var d Digest
	binary.BigEndian.PutUint64(d[:8], h.Hi)
	binary.BigEndian.PutUint64(d[8:], h.Lo)
	return d
}
