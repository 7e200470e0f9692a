package shim

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/wire"
)

// rmwScript runs a read-modify-write (wire.RMW) on a key and marks it
// applied, atomically, as applyScript does for writes: a retransmitted RMW
// that a previous run of the shim applied gets the result that run stored
// in the mark, and is not applied twice (an INCR counts once).
//
// KEYS[1] is the key, KEYS[2] the mark; ARGV[1] the operation's name,
// ARGV[2] its argument (incrby: the delta in decimal), ARGV[3] the mark's
// lifetime in milliseconds, ARGV[4] the largest value allowed, and for set
// ARGV[5] the condition (0, 1 NX, 2 XX), ARGV[6] GET (1), ARGV[7] the
// expiry in milliseconds (0: none), ARGV[8] KEEPTTL (1). It returns
// {1, result, value} when it applied the operation, {1, result} when the
// key does not exist afterwards, {3, result} when it exists with an expiry
// (no cache may hold a key that expires: phase 2 leaves the copies
// invalid and sends parked readers to storage), {0, result} when the
// mark was there, {-1} when the stored value is not an integer or the sum
// overflows, {-2} when an append would exceed the largest value.
var rmwScript = redis.NewScript(`
local done = redis.call('GET', KEYS[2])
if done then return {0, done} end
local op, arg = ARGV[1], ARGV[2]
local result, value
if op == 'incrby' then
  local ok, n = pcall(redis.call, 'INCRBY', KEYS[1], arg)
  if not ok then return {-1} end
  result = tostring(n)
  value = result
elseif op == 'append' then
  if redis.call('STRLEN', KEYS[1]) + string.len(arg) > tonumber(ARGV[4]) then return {-2} end
  result = tostring(redis.call('APPEND', KEYS[1], arg))
  value = redis.call('GET', KEYS[1])
elseif op == 'getset' then
  local old = redis.call('GET', KEYS[1])
  redis.call('SET', KEYS[1], arg)
  if old then result = '1' .. old else result = '0' end
  value = arg
elseif op == 'setnx' then
  result = tostring(redis.call('SETNX', KEYS[1], arg))
  value = redis.call('GET', KEYS[1])
elseif op == 'setxx' then
  if redis.call('SET', KEYS[1], arg, 'XX') then result = '1' else result = '0' end
  value = redis.call('GET', KEYS[1])
elseif op == 'set' then
  local cmd = {'SET', KEYS[1], arg}
  if ARGV[5] == '1' then table.insert(cmd, 'NX') elseif ARGV[5] == '2' then table.insert(cmd, 'XX') end
  if ARGV[6] == '1' then table.insert(cmd, 'GET') end
  if ARGV[7] ~= '0' then table.insert(cmd, 'PX'); table.insert(cmd, ARGV[7]) elseif ARGV[8] == '1' then table.insert(cmd, 'KEEPTTL') end
  local r = redis.call(unpack(cmd))
  if ARGV[6] == '1' then
    local set = ARGV[5] == '0' or (ARGV[5] == '1' and not r) or (ARGV[5] == '2' and r)
    if set then result = '1' else result = '0' end
    if r then result = result .. '1' .. r else result = result .. '0' end
  elseif r then result = '1' else result = '0' end
  value = redis.call('GET', KEYS[1])
else
  return redis.error_reply('unknown RMW ' .. op)
end
redis.call('SET', KEYS[2], result, 'PX', ARGV[3])
if value and redis.call('PTTL', KEYS[1]) >= 0 then return {3, result} end
if value then return {1, result, value} end
return {1, result}
`)

// rmwOutcome is what an RMW did in Redis: whether this call applied it
// (false: a previous run of the shim had, and result is that run's), the
// status (StatusInvalid or StatusTooLarge: nothing applied), the result
// for the reply, and the key's value afterwards (exists false: none;
// uncacheable: the key exists with an expiry, value unset).
type rmwOutcome struct {
	applied     bool
	status      wire.Status
	result      []byte
	value       []byte
	exists      bool
	uncacheable bool
}

// rmwCall is the run of rmwScript that applies r's RMW once; nil for a
// malformed operation, refused with StatusInternal (writeOutcomeOf).
func (s *Shim) rmwCall(r *request) *redisbatch.Call {
	op, arg, perr := wire.ParseRMW(r.value)
	if perr != nil {
		// A malformed operation is refused, not a Redis failure.
		s.log.Debug("malformed RMW refused", "key", r.key, "src", r.src, "err", perr)
		return nil
	}
	argv := []any{op.String(), string(arg), s.cfg.DedupTTL.Milliseconds(), wire.MaxValueLen}
	switch op {
	case wire.RMWIncrBy:
		argv[1] = strconv.FormatInt(int64(binary.BigEndian.Uint64(arg)), 10)
	case wire.RMWSet:
		cond, opts, px, value, _ := wire.ParseSetArg(arg) // ParseRMW checked it
		argv[1] = string(value)
		argv = append(argv, cond, bit(opts&wire.SetGet), px, bit(opts&wire.SetKeepTTL))
	}
	return &redisbatch.Call{Script: rmwScript, Keys: []string{r.key, appliedKey(r.dedupKey())}, Args: argv}
}

// rmwResult reads the reply of call, r's rmwCall.
func rmwResult(r *request, call *redisbatch.Call) (rmwOutcome, error) {
	op := call.Args[0]
	if call.Err != nil {
		return rmwOutcome{}, fmt.Errorf("cannot %s %q: %w", op, r.key, call.Err)
	}
	res, ok := call.Result.([]any)
	if !ok || len(res) == 0 {
		return rmwOutcome{}, fmt.Errorf("cannot %s %q: the script returned %v", op, r.key, call.Result)
	}
	code, _ := res[0].(int64)
	switch {
	case code == -1:
		return rmwOutcome{status: wire.StatusInvalid}, nil
	case code == -2:
		return rmwOutcome{status: wire.StatusTooLarge}, nil
	case len(res) < 2:
		return rmwOutcome{}, fmt.Errorf("cannot %s %q: the script returned %v", op, r.key, res)
	}
	out := rmwOutcome{applied: code > 0, uncacheable: code == 3, result: []byte(fmt.Sprint(res[1]))}
	if len(res) > 2 {
		out.value, out.exists = []byte(fmt.Sprint(res[2])), true
	}
	return out, nil
}

// bit is 1 when b is non-zero.
func bit(b byte) int {
	if b != 0 {
		return 1
	}
	return 0
}
