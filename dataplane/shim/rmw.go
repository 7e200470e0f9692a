package shim

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/metrics"
	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/rediscmd"
	"github.com/distcache/distcache/dataplane/wire"
)

// rmwScript runs read-modify-writes (wire.RMW), each on its own key, and
// marks each applied, atomically, as applyScript does for writes: a
// retransmitted RMW that a previous run of the shim applied gets the
// result that run stored in its mark, and is not applied twice (an INCR
// counts once). One run serves the RMWs of a receive batch (applyBatch).
// The marks are fields of a hash per sender and block of markBlockBits
// sequence numbers (rmwMarks), the field the sequence number's place in
// the block and the value the result: one HSET and one PEXPIRE per hash
// for the run, instead of a key and an expiry per RMW. An RMW is looked
// up in its hash and under the mark key earlier versions set
// (appliedKey).
//
// ARGV[1] is the marks' lifetime in milliseconds, ARGV[2] the largest
// value allowed. The i-th RMW's key is KEYS[3i-2], its earlier mark key
// KEYS[3i-1], its hash of marks KEYS[3i]; its arguments are the eight
// from ARGV[3+8(i-1)]: 1 for the request's first datagram
// (wire.FlagFirst: no mark to look up), the operation's name, its
// argument (incrby: the delta in decimal; command: its strings in
// MessagePack; release: none, and nothing changes in Redis), for set the condition (0, 1 NX, 2 XX) and for a read-only
// command "r" (no mark: run again when sent again), GET (1), the expiry in
// milliseconds (0: none) and KEEPTTL (1), and the mark's field. It
// returns, per RMW, {1, result, value} when it applied the operation,
// {1, result} when the key does not exist afterwards, {3, result} when it
// exists with an expiry or holds another type than a string (no cache may
// hold it: phase 2 leaves the copies invalid and sends parked readers to
// storage), {0, result} when the mark was there, {-1} when the stored
// value is not an integer or the sum overflows, {-2} when an append would
// exceed the largest value, {-4} when the key holds another type than the
// operation's, and {-3, message} when Redis refused it otherwise: one
// RMW's error leaves the others of the run alone. A command's result is
// Redis' reply in RESP2 (resp), its errors included: they are answers,
// not failures of the RMW.
var rmwScript = redis.NewScript(rediscmd.LuaRun + `
local function command(key, arg, max)
  local result = runcommand(key, arg, max)
  local t = redis.call('TYPE', key).ok
  if t == 'none' then return {1, result} end
  if t ~= 'string' or redis.call('PTTL', key) >= 0 or redis.call('STRLEN', key) > max then return {3, result} end
  return {1, result, redis.call('GET', key)}
end
local function current(key)
  local t = redis.call('TYPE', key).ok
  if t == 'string' then return redis.call('GET', key), false end
  return nil, t ~= 'none'
end
local function wrongtype(e)
  if string.find(tostring(e), 'WRONGTYPE', 1, true) then return {-4} end
  return {-1}
end
local function rmw(key, old, marks, a, max)
  if ARGV[a] ~= '1' then
    local done = redis.call('GET', old) or redis.call('HGET', marks, ARGV[a+7])
    if done then return {0, done} end
  end
  local op, arg = ARGV[a+1], ARGV[a+2]
  local result, value, other
  if op == 'command' then
    return command(key, arg, max)
  elseif op == 'release' then
    return {3, '0'}
  elseif op == 'incrby' then
    local ok, n = pcall(redis.call, 'INCRBY', key, arg)
    if not ok then return wrongtype(n) end
    result = redis.call('GET', key)
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
    value, other = current(key)
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
    error('unknown RMW ' .. op)
  end
  if other or (value and redis.call('PTTL', key) >= 0) then return {3, result} end
  if value then return {1, result, value} end
  return {1, result}
end
local max, out, fields, hashes = tonumber(ARGV[2]), {}, {}, {}
for i = 1, #KEYS / 3 do
  local a, marks = 3 + 8*(i-1), KEYS[3*i]
  local ok, r = pcall(rmw, KEYS[3*i-2], KEYS[3*i-1], marks, a, max)
  if not ok and wrongtype(r)[1] == -4 then
    r = {-4}
  elseif not ok then
    r = {-3, tostring(r)}
  elseif r[1] > 0 and ARGV[a+3] ~= 'r' then
    if not fields[marks] then fields[marks] = {}; hashes[#hashes+1] = marks end
    local f = fields[marks]
    f[#f+1] = ARGV[a+7]; f[#f+1] = r[2]
  end
  out[i] = r
end
for _, marks in ipairs(hashes) do
  redis.call('HSET', marks, unpack(fields[marks]))
  redis.call('PEXPIRE', marks, ARGV[1])
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
func (s *Shim) rmwCall(r *request) *redisbatch.Call {
	op, arg, perr := wire.ParseRMW(r.value)
	if perr != nil {
		// A malformed operation is refused, not a Redis failure.
		s.log.Debug("malformed RMW refused", "key", r.key, "src", r.src, "err", perr)
		return nil
	}
	marks, field := rmwMarks(r.dedupKey())
	args := []any{s.cfg.DedupTTL.Milliseconds(), wire.MaxValueLen, oneIf(r.first), op.String(), string(arg), 0, 0, 0, 0, field}
	switch op {
	case wire.RMWIncrBy:
		args[4] = strconv.FormatInt(int64(binary.BigEndian.Uint64(arg)), 10)
	case wire.RMWSet:
		cond, opts, px, value, _ := wire.ParseSetArg(arg) // ParseRMW checked it
		args[4], args[5], args[6], args[7], args[8] = string(value), cond, bit(opts&wire.SetGet), px, bit(opts&wire.SetKeepTTL)
	case wire.RMWCommand:
		argv, _ := wire.ParseCommandArg(arg) // ParseRMW checked it
		spec := rediscmd.Lookup(argv[0])
		if spec == nil || !spec.ArityOK(len(argv)+1) {
			// Only the commands the table lists, on this key alone.
			s.log.Debug("command refused", "key", r.key, "src", r.src, "command", string(argv[0]))
			return nil
		}
		args[4] = rediscmd.PackArgs(argv)
		if !spec.Write {
			args[5] = "r" // nothing to apply again: no mark
		}
	}
	return &redisbatch.Call{Script: rmwScript, Keys: []string{r.key, appliedKey(r.dedupKey()), marks}, Args: args}
}

// joinRMWs is one run of rmwScript for the RMWs of calls, each a run for
// one (rmwCall), in their order.
func joinRMWs(calls []*redisbatch.Call) *redisbatch.Call {
	if len(calls) == 1 {
		return calls[0]
	}
	keys := make([]string, 0, 3*len(calls))
	args := append(make([]any, 0, 2+8*len(calls)), calls[0].Args[:2]...) // the marks' lifetime, the largest value
	for _, c := range calls {
		keys = append(keys, c.Keys...)
		args = append(args, c.Args[2:]...)
	}
	return &redisbatch.Call{Script: rmwScript, Keys: keys, Args: args}
}

// rmwMarks is the hash of marks that holds request k's, and its field
// (rmwScript): one hash per sender and block of markBlockBits sequence
// numbers, as markBlock's bitmaps.
func rmwMarks(k dedupKey) (string, int64) { return blockMark(k, "/rmw/") }

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
	case code == -4:
		return rmwOutcome{status: wire.StatusWrongType}, nil
	case code == -3 && len(res) == 2:
		return rmwOutcome{}, fmt.Errorf("cannot apply the RMW of %q: %v", r.key, res[1])
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

// readOnlyCommand says whether rmw, an RMW's operation, runs a read-only
// command of package rediscmd.
func readOnlyCommand(rmw []byte) bool {
	op, arg, err := wire.ParseRMW(rmw)
	if err != nil || op != wire.RMWCommand {
		return false
	}
	argv, _ := wire.ParseCommandArg(arg) // ParseRMW checked it
	spec := rediscmd.Lookup(argv[0])
	return spec != nil && !spec.Write && spec.ArityOK(len(argv)+1)
}

// serveCommandRead runs r, an RMW of a read-only command, as a read: with
// a unit of the emulated capacity, without the key's lock or the write's
// phases (Redis' answer is current when Redis gives it, whatever the
// caches hold), and with no mark; its reply is not kept for
// retransmissions, which run it again.
func (s *Shim) serveCommandRead(r *request) {
	s.stats.rmws.Add(1)
	if !s.takeUnit(r.start.Add(s.cfg.QueueTimeout)) {
		s.shed([]*request{r})
		return
	}
	status, result := wire.StatusInternal, []byte(nil)
	if call := s.rmwCall(r); call != nil {
		s.redisq.EvalMany(s.ctx, []*redisbatch.Call{call})
		out, err := rmwResult(r, call)
		switch {
		case err != nil:
			s.redisError(r.op.String(), r.key, err)
			status = wire.StatusUnavailable
		default:
			status, result = out.status, out.result
		}
	}
	s.metrics.requests.Observe(r.op, metrics.StatusResult(status), time.Since(r.start))
	reply := s.replyTo(r, status, 0, result)
	s.answerRead(r, &reply)
}
