package shim

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/wire"
)

// rmwScript runs a read-modify-write (wire.RMW) on a key and marks it
// applied, atomically, as applyScript does for writes: a retransmitted RMW
// that a previous run of the shim applied gets the result that run stored
// in the mark, and is not applied twice (an INCR counts once).
//
// KEYS[1] is the key, KEYS[2] the mark; ARGV[1] the operation's name,
// ARGV[2] its argument (incrby: the delta in decimal), ARGV[3] the mark's
// lifetime in milliseconds, ARGV[4] the largest value allowed. It returns
// {1, result, value} when it applied the operation (value absent when the
// key does not exist afterwards), {0, result} when the mark was there,
// {-1} when the stored value is not an integer or the sum overflows, {-2}
// when an append would exceed the largest value.
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
else
  return redis.error_reply('unknown RMW ' .. op)
end
redis.call('SET', KEYS[2], result, 'PX', ARGV[3])
if value then return {1, result, value} end
return {1, result}
`)

// rmwOutcome is what an RMW did in Redis: whether this call applied it
// (false: a previous run of the shim had, and result is that run's), the
// status (StatusInvalid or StatusTooLarge: nothing applied), the result
// for the reply, and the key's value afterwards (exists false: none).
type rmwOutcome struct {
	applied bool
	status  wire.Status
	result  []byte
	value   []byte
	exists  bool
}

// applyRMW runs r's RMW once in Redis.
func (s *Shim) applyRMW(ctx context.Context, r *request) (rmwOutcome, error) {
	op, arg, perr := wire.ParseRMW(r.value)
	if perr != nil {
		// A malformed operation is refused, not a Redis failure.
		s.log.Debug("malformed RMW refused", "key", r.key, "src", r.src, "err", perr)
		return rmwOutcome{status: wire.StatusInternal}, nil
	}
	argv := string(arg)
	if op == wire.RMWIncrBy {
		argv = strconv.FormatInt(int64(binary.BigEndian.Uint64(arg)), 10)
	}
	res, err := rmwScript.Run(ctx, s.rdb, []string{r.key, appliedKey(r.dedupKey())},
		op.String(), argv, s.cfg.DedupTTL.Milliseconds(), wire.MaxValueLen).Slice()
	if err != nil {
		return rmwOutcome{}, fmt.Errorf("cannot %s %q: %w", op, r.key, err)
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
	out := rmwOutcome{applied: code == 1, result: []byte(fmt.Sprint(res[1]))}
	if len(res) > 2 {
		out.value, out.exists = []byte(fmt.Sprint(res[2])), true
	}
	return out, nil
}
