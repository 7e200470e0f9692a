// Package heldkeys is the record, in a shard's Redis, of the keys a cache
// may hold, and the writes that clients send to Redis themselves for the
// keys no cache holds (spec.dataPlane.directWrites).
//
// # Why
//
// A write runs two-phase coherence at its shim (DistCache §4.3): every
// cached copy is invalidated before Redis is written, and updated after.
// Most keys are never cached (a cache holds the hot few), and for them the
// shim's round trip, its at-most-once bookkeeping and its lock cost the
// storage server far more than the write itself costs Redis. A proxy
// sends such a write to Redis and is done.
//
// # How
//
// A shim adds a key to the set Key in its Redis before it reads the key
// for a cache: a fill (FETCH), or a read whose value a node may hand to
// the readers it coalesced (a tracked read). It adds it too before a
// write whose phase 1 invalidated a node, since that write's phase 2 (an
// UPDATE) hands the node the written value. The add is sent before the
// read or write on the same connection, or waited for, so Redis runs it
// first. A direct write is a script (Set, IncrBy, or SetMany for several
// keys of one shard) that Redis runs atomically: it writes a key only if
// the key is not in the set, and otherwise answers so, and the client
// sends the write to the shim instead.
//
// # Why it is safe
//
// A cache node holds a value only if its shim read it for the node, or
// wrote it and then updated the node, after adding the key to the set.
// A key leaves the set only at a shim write, under the key's lock, whose
// phase 1 invalidated every node that may hold the key, found no copy
// (no acknowledgement with FlagHit) and released no node unacknowledged;
// it removes the key before its Redis write and its phase 2 hands no
// node a value (shim/write.go, applyWrite). Take a direct write W that
// Redis ran at time t. The key was not in the set at t, so every copy,
// and every value a node hands to coalesced readers, was read or written
// in Redis after the key last entered the set, which was after any value
// an earlier removal invalidated; and no read or write for a cache that
// started before t can hand a node a value after it: W's value or a later
// one is all a reader can see once W is acknowledged. No reader sees a value older than W
// Writes of keys in the set go through the shim and its coherence
// protocol, as before. testdata/directwrites.pml models the adds for
// SPIN (model_test.go), and finds the stale read when either is left
// out; testdata/trim_srem.pml models the removal, and finds one when its
// phase 2 carries the value.
//
// Transactions, scripts and commands of several keys (client/atomic.go)
// write the same way: they run in MULTI and EXEC on a connection that
// WATCHes Key and found none of their keys in it, so Redis runs them, at
// once, only while none of their keys is in the set, as it runs a direct
// write's script. To take a key out of the set, the client sends its shim
// a release (wire.RMWRelease): a write's phase 1 and the trim, whatever
// copies the acknowledgements reported, with a phase 2 that carries no
// value (trim_srem.pml's TRIM_ANY, checked with the others). It trims
// even when phase 1 released an owner without its acknowledgement: such
// an owner can never serve its copy again, as it left the key's
// ownership, or its lease ran out and its next lease comes with a flush
// of the shim's entries (package lease).
//
// A direct write whose connection broke is not sent again, to Redis or
// to the shim: Redis may still run the first one later, after the second
// was acknowledged, and undo a write that followed it. It fails with an
// unknown outcome.
//
// The set must not be evicted or flushed behind the shims' backs: run
// Redis with a maxmemory policy that keeps keys without an expiry
// (noeviction or a volatile-* policy), and clear the caches when Redis
// loses its data. The set holds the keys cached and written since, a few
// bytes each.
package heldkeys

import (
	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/rediscmd"
)

// Key is the Redis set of the keys a cache may hold.
const Key = "distcache:held"

// SetSource is the direct SET: KEYS[1] the key, KEYS[2] Key, ARGV[1] the
// value. It answers OK, or nil when a cache may hold the key.
const SetSource = `if redis.call('SISMEMBER', KEYS[2], KEYS[1]) == 1 then return false end
return redis.pcall('SET', KEYS[1], ARGV[1])`

// IncrBySource is the direct INCRBY: KEYS[1] the key, KEYS[2] Key,
// ARGV[1] the increment. It answers the new value, Redis's error for a
// value that is not an integer, or nil when a cache may hold the key.
const IncrBySource = `if redis.call('SISMEMBER', KEYS[2], KEYS[1]) == 1 then return false end
return redis.pcall('INCRBY', KEYS[1], ARGV[1])`

// SetManySource is the direct SET of several keys in one run: KEYS[1] Key,
// KEYS[2..n+1] the keys, ARGV[1..n] their values. It answers a string of
// one byte per key, in order: '1' written, '0' a cache may hold the key
// (not written), 'E' Redis refused the write (not written); then, if
// any was refused, a newline and the first refusal's text. Each key is
// checked and written atomically, as by SetSource, and the keys in turn:
// a key named twice ends with its last value.
const SetManySource = `local out, refusal = {}, nil
for i = 2, #KEYS do
  local held = redis.pcall('SISMEMBER', KEYS[1], KEYS[i])
  if type(held) == 'table' then
    out[i-1] = 'E'; refusal = refusal or held.err
  elseif held == 1 then
    out[i-1] = '0'
  else
    local r = redis.pcall('SET', KEYS[i], ARGV[i-1])
    if type(r) == 'table' and r.err then
      out[i-1] = 'E'; refusal = refusal or r.err
    else
      out[i-1] = '1'
    end
  end
end
if refusal then return table.concat(out) .. '\n' .. refusal end
return table.concat(out)`

// CommandSource runs a command of package rediscmd directly: KEYS[1] the
// key, KEYS[2] Key, ARGV[1] "w" for a command that may write the key,
// ARGV[2] the command (rediscmd.PackArgs of its name and its arguments
// after the key), ARGV[3] the largest reply. It answers Redis' reply in
// RESP2, or nil when the command may write and a cache may hold the key.
// A read-only command runs whatever caches hold: Redis' answer is current
// when Redis gives it.
const CommandSource = rediscmd.LuaRun + `
if ARGV[1] == 'w' and redis.call('SISMEMBER', KEYS[2], KEYS[1]) == 1 then return false end
return runcommand(KEYS[1], ARGV[2], tonumber(ARGV[3]))`

// Set, IncrBy, SetMany and Command are the scripts for go-redis.
var (
	Set     = redis.NewScript(SetSource)
	IncrBy  = redis.NewScript(IncrBySource)
	SetMany = redis.NewScript(SetManySource)
	Command = redis.NewScript(CommandSource)
)
