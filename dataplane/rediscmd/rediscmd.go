// Package rediscmd lists the Redis commands on one key that a storage shim
// runs for clients as they are, inside the coherence protocol (DistCache
// §4.3): hashes, lists, sets, sorted sets, HyperLogLog, geo, bitmaps,
// streams, and the string and expiry commands that the client has no
// operation of its own for.
//
// Each takes its key as its first argument, names no other key, and does
// not block. A gateway forwards such a command to its key's shim as one
// read-modify-write (wire.RMWCommand); the shim checks the command against
// this table, so a client cannot make it run anything else. It runs a
// command that may write in Redis under the key's lock as a write: every
// cached copy of the key is invalidated first, and afterwards the copies
// get the key's new value only if it is a string without an expiry. A key
// of another type, or one with an expiry, is never cached. It runs a
// read-only command as a read, without the lock or the phases, and keeps
// no record of its reply for retransmissions. A client that reads and
// writes Redis itself runs these commands there (package heldkeys).
package rediscmd

import (
	"encoding/binary"
	"strings"
)

// Spec describes one command as Redis' COMMAND does.
type Spec struct {
	// Name is the command's name in lower case.
	Name string
	// Arity is the number of arguments with the name: exactly Arity when
	// positive, at least -Arity when negative.
	Arity int
	// Write says the command may change its key; otherwise it is
	// read-only.
	Write bool
}

// Flags are the command's flags in COMMAND's reply.
func (s *Spec) Flags() []string {
	if s.Write {
		return []string{"write"}
	}
	return []string{"readonly"}
}

// table lists the commands, grouped as Redis' documentation groups them.
var table = []Spec{
	// Strings and keys (GET, SET, INCR and the like have operations of
	// their own).
	{"strlen", 2, false}, {"getrange", 4, false}, {"substr", 4, false}, {"setrange", 4, true},
	{"getdel", 2, true}, {"getex", -2, true}, {"incrbyfloat", 3, true},
	{"setex", 4, true}, {"psetex", 4, true},
	{"expire", -3, true}, {"pexpire", -3, true}, {"expireat", -3, true}, {"pexpireat", -3, true},
	{"ttl", 2, false}, {"pttl", 2, false}, {"expiretime", 2, false}, {"pexpiretime", 2, false},
	{"persist", 2, true}, {"type", 2, false}, {"dump", 2, false}, {"restore", -4, true},
	// Hashes.
	{"hset", -4, true}, {"hsetnx", 4, true}, {"hmset", -4, true}, {"hget", 3, false}, {"hmget", -3, false},
	{"hdel", -3, true}, {"hlen", 2, false}, {"hstrlen", 3, false}, {"hexists", 3, false},
	{"hkeys", 2, false}, {"hvals", 2, false}, {"hgetall", 2, false},
	{"hincrby", 4, true}, {"hincrbyfloat", 4, true}, {"hrandfield", -2, false}, {"hscan", -3, false},
	// Lists.
	{"lpush", -3, true}, {"rpush", -3, true}, {"lpushx", -3, true}, {"rpushx", -3, true},
	{"lpop", -2, true}, {"rpop", -2, true}, {"llen", 2, false}, {"lrange", 4, false}, {"lindex", 3, false},
	{"lset", 4, true}, {"lrem", 4, true}, {"ltrim", 4, true}, {"linsert", 5, true}, {"lpos", -3, false},
	// Sets.
	{"sadd", -3, true}, {"srem", -3, true}, {"smembers", 2, false}, {"sismember", 3, false},
	{"smismember", -3, false}, {"scard", 2, false}, {"spop", -2, true}, {"srandmember", -2, false},
	{"sscan", -3, false},
	// Sorted sets.
	{"zadd", -4, true}, {"zincrby", 4, true}, {"zrem", -3, true}, {"zcard", 2, false},
	{"zscore", 3, false}, {"zmscore", -3, false}, {"zrank", 3, false}, {"zrevrank", 3, false},
	{"zrange", -4, false}, {"zrevrange", -4, false}, {"zrangebyscore", -4, false},
	{"zrevrangebyscore", -4, false}, {"zrangebylex", -4, false}, {"zrevrangebylex", -4, false},
	{"zcount", 4, false}, {"zlexcount", 4, false}, {"zpopmin", -2, true}, {"zpopmax", -2, true},
	{"zremrangebyrank", 4, true}, {"zremrangebyscore", 4, true}, {"zremrangebylex", 4, true},
	{"zrandmember", -2, false}, {"zscan", -3, false},
	// HyperLogLog, bitmaps, geo, streams.
	{"pfadd", -2, true},
	{"setbit", 4, true}, {"getbit", 3, false}, {"bitcount", -2, false}, {"bitpos", -3, false},
	{"bitfield", -2, true}, {"bitfield_ro", -2, false},
	{"geoadd", -5, true}, {"geopos", -2, false}, {"geodist", -4, false}, {"geohash", -2, false},
	{"geosearch", -7, false},
	{"xadd", -5, true}, {"xlen", 2, false}, {"xrange", -4, false}, {"xrevrange", -4, false},
	{"xdel", -3, true}, {"xtrim", -4, true}, {"xsetid", -3, true},
	{"xack", -4, true}, {"xclaim", -6, true}, {"xautoclaim", -6, true}, {"xpending", -3, false},
}

// byName indexes table by name.
var byName = func() map[string]*Spec {
	m := make(map[string]*Spec, len(table))
	for i := range table {
		m[table[i].Name] = &table[i]
	}
	return m
}()

// Lookup finds the command named name, in any case; nil when the shim
// does not run it.
func Lookup(name []byte) *Spec {
	if s, ok := byName[string(name)]; ok {
		return s
	}
	return byName[strings.ToLower(string(name))]
}

// All returns every command, in the table's order.
func All() []Spec { return append([]Spec(nil), table...) }

// ArityOK checks the number of arguments, the name included.
func (s *Spec) ArityOK(n int) bool {
	if s.Arity >= 0 {
		return n == s.Arity
	}
	return n >= -s.Arity
}

// LuaRun defines the Lua function runcommand(key, packed, max), which runs
// a command of the table on key in Redis and returns Redis' reply encoded
// in RESP2, errors included: packed is PackArgs of the command's name and
// its arguments after the key; a reply over max bytes is replaced by an
// error (the command ran). The shims' scripts and the clients' direct
// scripts (package heldkeys) begin with it.
//
// Lua has one nil for Redis' null string and null array: GEOPOS, and LPOP
// and RPOP with a count, answer null arrays. Lua's numbers are doubles:
// integers beyond 2^53 lose precision.
const LuaRun = `
local function resp(r, null)
  local t = type(r)
  if t == 'number' then return ':' .. string.format('%.0f', r) .. '\r\n' end
  if t == 'string' then return '$' .. #r .. '\r\n' .. r .. '\r\n' end
  if t == 'boolean' then if r then return ':1\r\n' end return null end
  if r.err then return '-' .. r.err .. '\r\n' end
  if r.ok then return '+' .. r.ok .. '\r\n' end
  local parts = {'*' .. #r .. '\r\n'}
  for i = 1, #r do parts[#parts+1] = resp(r[i], null) end
  return table.concat(parts)
end
local function runcommand(key, packed, max)
  local argv = cmsgpack.unpack(packed)
  table.insert(argv, 2, key)
  local name = string.lower(argv[1])
  local null = '$-1\r\n'
  if name == 'geopos' or ((name == 'lpop' or name == 'rpop') and #argv > 2) then null = '*-1\r\n' end
  local result = resp(redis.pcall(unpack(argv)), null)
  if #result > max then
    result = '-ERR DistCache: a reply of ' .. #result .. ' bytes is over the limit of ' .. max .. ' bytes\r\n'
  end
  return result
end
`

// PackArgs encodes args as a MessagePack array of strings, which LuaRun's
// runcommand decodes with Redis' cmsgpack.
func PackArgs(args [][]byte) string {
	n := 5
	for _, b := range args {
		n += 5 + len(b)
	}
	out := make([]byte, 0, n)
	switch l := len(args); {
	case l < 16:
		out = append(out, 0x90|byte(l))
	case l <= 0xffff:
		out = binary.BigEndian.AppendUint16(append(out, 0xdc), uint16(l))
	default:
		out = binary.BigEndian.AppendUint32(append(out, 0xdd), uint32(l))
	}
	for _, b := range args {
		switch l := len(b); {
		case l < 32:
			out = append(out, 0xa0|byte(l))
		case l <= 0xff:
			out = append(out, 0xd9, byte(l))
		case l <= 0xffff:
			out = binary.BigEndian.AppendUint16(append(out, 0xda), uint16(l))
		default:
			out = binary.BigEndian.AppendUint32(append(out, 0xdb), uint32(l))
		}
		out = append(out, b...)
	}
	return string(out)
}
