package shim

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/wire"
)

// rmwScript runs read-modify-writes (wire.RMW), each on its own key, and
// marks each applied, atomically, as applyScript does for writes: a
// retransmitted RMW that a previous run of the shim applied gets the
// result that run stored in the mark, and is not applied twice (an INCR
// counts once). One run serves the RMWs of a receive batch (applyBatch).
//
// ARGV[1] is the marks' lifetime in milliseconds, ARGV[2] the largest
// value allowed. The i-th RMW's key is KEYS[2i-1] and its mark KEYS[2i];
// its arguments are the seven from ARGV[3+7(i-1)]: 1 for the request's
// first datagram (wire.FlagFirst: no mark to look up), the operation's
// name, its argument (incrby: the delta in decimal), and for set the
// condition (0, 1 NX, 2 XX), GET (1), the expiry in milliseconds (0:
// none), KEEPTTL (1). It returns, per RMW, {1, result, value} when it
// applied the operation, {1, result} when the key does not exist
// afterwards, {3, result} when it exists with an expiry (no cache may hold
// a key that expires: phase 2 leaves the copies invalid and sends parked
// readers to storage), {0, result} when the mark was there, {-1} when the
// stored value is not an integer or the sum overflows, {-2} when an
// append would exceed the largest value.
var rmwScript = redis.NewScript(`
local function rmw(key, mark, a, ttl, max)
  if ARGV[a] ~= '1' then
    local done = redis.call('GET', mark)
    if done then return {0, done} end
  end
  local op, arg = ARGV[a+1], ARGV[a+2]
  local result, value
  if op == 'incrby' then
    local ok, n = pcall(redis.call, 'INCRBY', key, arg)
    if not ok then return {-1} end
    result = tostring(n)
    value = result
  elseif op == 'append' then
    if redis.call('STRLEN', key) + string.len(arg) > max then return {-2} end
    result = tostring(redis.call('APPEND', key, arg))
    value = redis.call('GET', key)
  elseif op == 'getset' then
    local old = redis.call('GET', key)
    redis.call('SET', key, arg)
    if old then result = '1' .. old else result = '0' end
    value = arg
  elseif op == 'setnx' then
    result = tostring(redis.call('SETNX', key, arg))
    value = redis.call('GET', key)
  elseif op == 'setxx' then
    if redis.call('SET', key, arg, 'XX') then result = '1' else result = '0' end
    value = redis.call('GET', key)
  elseif op == 'set' then
    local cond, get = ARGV[a+3], ARGV[a+4]
    local cmd = {'SET', key, arg}
    if cond == '1' then table.insert(cmd, 'NX') elseif cond == '2' then table.insert(cmd, 'XX') end
    if get == '1' then table.insert(cmd, 'GET') end
    if ARGV[a+5] ~= '0' then table.insert(cmd, 'PX'); table.insert(cmd, ARGV[a+5]) elseif ARGV[a+6] == '1' then table.insert(cmd, 'KEEPTTL') end
    local r = redis.call(unpack(cmd))
    if get == '1' then
      local set = cond == '0' or (cond == '1' and not r) or (cond == '2' and r)
      if set then result = '1' else result = '0' end
      if r then result = result .. '1' .. r else result = result .. '0' end
    elseif r then result = '1' else result = '0' end
    value = redis.call('GET', key)
  else
    return redis.error_reply('unknown RMW ' .. op)
  end
  redis.call('SET', mark, result, 'PX', ttl)
  if value and redis.call('PTTL', key) >= 0 then return {3, result} end
  if value then return {1, result, value} end
  return {1, result}
end
local ttl, max, out = ARGV[1], tonumber(ARGV[2]), {}
for i = 1, #KEYS / 2 do
  out[i] = rmw(KEYS[2*i-1], KEYS[2*i], 3 + 7*(i-1), ttl, max)
end
return out
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
func (s *Shim) rmwCall(r *request) *redisbatch.Call { return s.rmwManyCall([]*request{r}) }

// rmwManyCall is one run of rmwScript that applies the RMWs rs once, each
// on its own key; nil if one of them is malformed (the caller parses each
// first, rmwArgs).
func (s *Shim) rmwManyCall(rs []*request) *redisbatch.Call {
	keys := make([]string, 0, 2*len(rs))
	args := make([]any, 2, 2+7*len(rs))
	args[0], args[1] = s.cfg.DedupTTL.Milliseconds(), wire.MaxValueLen
	for _, r := range rs {
		a, ok := s.rmwArgs(r)
		if !ok {
			return nil
		}
		keys = append(keys, r.key, appliedKey(r.dedupKey()))
		args = append(args, a[:]...)
	}
	return &redisbatch.Call{Script: rmwScript, Keys: keys, Args: args}
}

// rmwArgs are rmwScript's seven arguments for r's RMW; false for a
// malformed operation.
func (s *Shim) rmwArgs(r *request) ([7]any, bool) {
	op, arg, perr := wire.ParseRMW(r.value)
	if perr != nil {
		// A malformed operation is refused, not a Redis failure.
		s.log.Debug("malformed RMW refused", "key", r.key, "src", r.src, "err", perr)
		return [7]any{}, false
	}
	a := [7]any{oneIf(r.first), op.String(), string(arg), 0, 0, 0, 0}
	switch op {
	case wire.RMWIncrBy:
		a[2] = strconv.FormatInt(int64(binary.BigEndian.Uint64(arg)), 10)
	case wire.RMWSet:
		cond, opts, px, value, _ := wire.ParseSetArg(arg) // ParseRMW checked it
		a[2], a[3], a[4], a[5], a[6] = string(value), cond, bit(opts&wire.SetGet), px, bit(opts&wire.SetKeepTTL)
	}
	return a, true
}

// rmwReplies splits call, a run of rmwScript for n RMWs, into one call per
// RMW, in order, each as rmwResult reads a run for one.
func rmwReplies(call *redisbatch.Call, n int) []*redisbatch.Call {
	res, _ := call.Result.([]any)
	out := make([]*redisbatch.Call, n)
	for i := range out {
		c := &redisbatch.Call{Err: call.Err}
		switch {
		case c.Err != nil:
		case len(res) != n:
			c.Err = fmt.Errorf("the script returned %d replies for %d operations", len(res), n)
		default:
			c.Result = []any{res[i]}
		}
		out[i] = c
	}
	return out
}

// rmwResult reads the reply of call, a run of rmwScript for r alone.
func rmwResult(r *request, call *redisbatch.Call) (rmwOutcome, error) {
	if call.Err != nil {
		return rmwOutcome{}, fmt.Errorf("cannot apply the RMW of %q: %w", r.key, call.Err)
	}
	outer, _ := call.Result.([]any)
	var res []any
	if len(outer) == 1 {
		res, _ = outer[0].([]any)
	}
	if len(res) == 0 {
		return rmwOutcome{}, fmt.Errorf("cannot apply the RMW of %q: the script returned %v", r.key, call.Result)
	}
	code, _ := res[0].(int64)
	switch {
	case code == -1:
		return rmwOutcome{status: wire.StatusInvalid}, nil
	case code == -2:
		return rmwOutcome{status: wire.StatusTooLarge}, nil
	case len(res) < 2:
		return rmwOutcome{}, fmt.Errorf("cannot apply the RMW of %q: the script returned %v", r.key, res)
	}
	out := rmwOutcome{applied: code > 0, uncacheable: code == 3, result: []byte(fmt.Sprint(res[1]))}
	if len(res) > 2 {
		out.value, out.exists = []byte(fmt.Sprint(res[2])), true
	}
	return out, nil
}

// oneIf is 1 for true, 0 for false.
func oneIf(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bit is 1 when b is non-zero.
func bit(b byte) int { return oneIf(b != 0) }
