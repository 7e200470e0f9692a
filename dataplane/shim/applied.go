package shim

import (
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/distcache/distcache/dataplane/redisbatch"
	"github.com/distcache/distcache/dataplane/wire"
)

// AppliedPrefix starts the Redis keys that mark the writes a shim applied
// (see applyScript); they expire after Config.DedupTTL. Keys of the store
// must not start with it.
const AppliedPrefix = "distcache:applied:"

// applyScript applies a write and marks it applied, atomically, unless a
// mark says it was applied already. The in-memory dedupTable keeps a
// retransmitted write from running twice within one shim process; the mark
// keeps it from running twice across a restart: a shim killed after its
// Redis write but before its reply leaves the client retransmitting, and
// the restarted shim, whose table is empty, would otherwise apply the old
// value again after later writes of other clients.
//
// KEYS[1] is the key, KEYS[2] the mark; ARGV[1] is "put" or "del", ARGV[2]
// the value, ARGV[3] the mark's lifetime in milliseconds. It returns the
// write's outcome: 1 if it applied it, 2 if it applied a delete of a key
// that existed; the mark holds the outcome, and a write whose mark was
// there returns its outcome negated.
var applyScript = redis.NewScript(`
local done = redis.call('GET', KEYS[2])
if done then return -tonumber(done) end
local outcome = 1
if ARGV[1] == 'put' then redis.call('SET', KEYS[1], ARGV[2]) else outcome = 1 + redis.call('DEL', KEYS[1]) end
redis.call('SET', KEYS[2], outcome, 'PX', ARGV[3])
return outcome
`)

// appliedKey is the mark of request k.
func appliedKey(k dedupKey) string {
	b := make([]byte, 0, len(AppliedPrefix)+64)
	b = append(b, AppliedPrefix...)
	b = k.src.AppendTo(b)
	b = append(b, '/')
	b = strconv.AppendUint(b, k.seq, 16)
	b = append(b, '/')
	b = append(b, k.op.String()...)
	return string(b)
}

// applyCall is the Redis call that applies r, a PUT or DEL, once: a run
// of applyScript or, for the first datagram of a PUT (wire.FlagFirst), the
// script's writes without its check. No datagram of that PUT went out
// before, so no shim has applied it or set its mark; the mark is set all
// the same, for the retransmissions a later run of the shim may receive.
// One MSET writes the key and the mark together, as the script does; the
// mark's expiry follows (a shim that dies in between leaves a mark that
// never expires, which is still true). The two cost Redis a fifth of a
// script's run (docs/benchmarks.md).
func (s *Shim) applyCall(r *request) *redisbatch.Call {
	mark, ttl := appliedKey(r.dedupKey()), s.cfg.DedupTTL.Milliseconds()
	if r.op == wire.OpPut && r.first {
		return &redisbatch.Call{Cmds: [][]any{{"mset", r.key, r.value, mark, 1}, {"pexpire", mark, ttl}}}
	}
	op, value := "del", []byte(nil)
	if r.op == wire.OpPut {
		op, value = "put", r.value
	}
	return &redisbatch.Call{Script: applyScript, Keys: []string{r.key, mark}, Args: []any{op, value, ttl}}
}

// applyResult reads the reply of call, r's applyCall: whether this run
// applied r (false: an earlier run of the shim already had) and, for a
// delete, whether the key existed (as the first run found it).
func applyResult(r *request, call *redisbatch.Call) (applied, existed bool, err error) {
	if call.Cmds != nil {
		// The MSET's outcome is the PUT's; the expiry's only its mark's.
		if call.Err != nil {
			return false, false, fmt.Errorf("cannot put %q: %w", r.key, call.Err)
		}
		return true, false, nil
	}
	n, ok := call.Result.(int64)
	err = call.Err
	if err == nil && !ok {
		err = fmt.Errorf("unexpected reply %v", call.Result)
	}
	if err != nil {
		return false, false, fmt.Errorf("cannot %s %q: %w", call.Args[0], r.key, err)
	}
	return n > 0, n == 2 || n == -2, nil
}
