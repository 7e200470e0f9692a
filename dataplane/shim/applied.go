package shim

import (
	"fmt"
	"net/netip"
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
// KEYS[1] is the key, KEYS[2] the mark, KEYS[3] the bitmap that holds the
// marks of first datagrams (firstPutsCall); ARGV[1] is "put" or "del",
// ARGV[2] the value, ARGV[3] the mark's lifetime in milliseconds, ARGV[4]
// the request's bit in KEYS[3]. It returns the write's outcome: 1 if it
// applied it, 2 if it applied a delete of a key that existed; the mark
// holds the outcome, and a write whose mark was there returns its outcome
// negated (-1 for a bit: only PUTs set one).
var applyScript = redis.NewScript(`
local done = redis.call('GET', KEYS[2])
if done then return -tonumber(done) end
if redis.call('GETBIT', KEYS[3], ARGV[4]) == 1 then return -1 end
local outcome = 1
if ARGV[1] == 'put' then redis.call('SET', KEYS[1], ARGV[2]) else outcome = 1 + redis.call('DEL', KEYS[1]) end
redis.call('SET', KEYS[2], outcome, 'PX', ARGV[3])
return outcome
`)

// markBlockBits is how many sequence numbers of one sender share a bitmap
// of marks (markBlock).
const markBlockBits = 4096

// markBlock is the bitmap that holds the mark of request k's first
// datagram, and k's bit in it: one bitmap per sender and block of
// markBlockBits sequence numbers, so that the first PUTs of a receive
// batch, which come from few senders with close sequence numbers, are
// marked by a BITFIELD per block rather than a key each.
func markBlock(k dedupKey) (string, int64) { return blockMark(k, "/blk/") }

// blockMark is the key of k's block of markBlockBits sequence numbers,
// named after its sender and kind, and k's place in it.
func blockMark(k dedupKey, kind string) (string, int64) {
	b := make([]byte, 0, len(AppliedPrefix)+64)
	b = append(b, AppliedPrefix...)
	b = k.src.AppendTo(b)
	b = append(b, kind...)
	b = strconv.AppendUint(b, k.seq/markBlockBits, 16)
	return string(b), int64(k.seq % markBlockBits)
}

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
// script's writes without its check (firstPutsCall).
func (s *Shim) applyCall(r *request) *redisbatch.Call {
	if r.op == wire.OpPut && r.first {
		return s.firstPutsCall([]*request{r})
	}
	mark, ttl := appliedKey(r.dedupKey()), s.cfg.DedupTTL.Milliseconds()
	block, bit := markBlock(r.dedupKey())
	op, value := "del", []byte(nil)
	if r.op == wire.OpPut {
		op, value = "put", r.value
	}
	return &redisbatch.Call{Script: applyScript, Keys: []string{r.key, mark, block}, Args: []any{op, value, ttl, bit}}
}

// firstPutsCall writes the first datagrams of PUTs ps and marks them, in
// one transaction: MULTI, one MSET of every key, a BITFIELD per bitmap of
// marks (markBlock) setting the PUTs' bits, a PEXPIRE per bitmap, EXEC. No
// datagram of these PUTs went out before, so no shim has applied them or
// marked them, and the script's lookup is skipped; the marks are set all
// the same, for the retransmissions a later run of the shim may receive.
// The transaction makes a write and its mark one: a shim that dies while
// it sends leaves neither. A bitmap lives DedupTTL after its last mark.
// Redis's cost per PUT falls with the batch (docs/benchmarks.md). A lone
// PUT takes two commands instead of five: one MSET of its key and a mark
// key of its own (appliedKey, which the script looks up too), and the
// mark's expiry (a shim that dies in between leaves a mark that never
// expires, which is still true).
func (s *Shim) firstPutsCall(ps []*request) *redisbatch.Call {
	if len(ps) == 1 {
		r := ps[0]
		mark := appliedKey(r.dedupKey())
		return &redisbatch.Call{Cmds: [][]any{{"mset", r.key, r.value, mark, 1}, {"pexpire", mark, s.cfg.DedupTTL.Milliseconds()}}}
	}
	mset := make([]any, 1, 1+2*len(ps))
	mset[0] = "mset"
	// The bitmaps of the batch's marks: few, as a batch comes from few
	// senders with close sequence numbers.
	type block struct {
		src  netip.AddrPort
		no   uint64 // the sequence numbers' block
		key  string
		args []any
	}
	var blocks []block
	for _, r := range ps {
		mset = append(mset, r.key, r.value)
		i, no := 0, r.seq/markBlockBits
		for i < len(blocks) && (blocks[i].src != r.src || blocks[i].no != no) {
			i++
		}
		if i == len(blocks) {
			key, _ := markBlock(r.dedupKey())
			blocks = append(blocks, block{src: r.src, no: no, key: key, args: []any{"bitfield", key}})
		}
		// For u1 the offset is the bit's own.
		blocks[i].args = append(blocks[i].args, "set", "u1", r.seq%markBlockBits, 1)
	}
	ttl := s.cfg.DedupTTL.Milliseconds()
	cmds := make([][]any, 0, 3+2*len(blocks))
	cmds = append(cmds, []any{"multi"}, mset)
	for _, b := range blocks {
		cmds = append(cmds, b.args, []any{"pexpire", b.key, ttl})
	}
	return &redisbatch.Call{Cmds: append(cmds, []any{"exec"})}
}

// applyResult reads the reply of call, r's applyCall: whether this run
// applied r (false: an earlier run of the shim already had) and, for a
// delete, whether the key existed (as the first run found it).
func applyResult(r *request, call *redisbatch.Call) (applied, existed bool, err error) {
	if call.Cmds != nil {
		if err := execErr(call); err != nil {
			return false, false, fmt.Errorf("cannot put %q: %w", r.key, err)
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

// execErr is why firstPutsCall's call failed: for a transaction the
// EXEC's error or the first error among its commands' replies, else the
// MSET's (the expiry's is only its mark's); nil if it applied the PUTs.
func execErr(call *redisbatch.Call) error {
	if call.Err != nil || call.Cmds[0][0] != "multi" {
		return call.Err
	}
	res, _ := call.Result.([]any)
	errs := call.Errs
	if len(res) == 0 || len(errs) != len(res) {
		return fmt.Errorf("unexpected replies %v", call.Result)
	}
	if err := errs[len(errs)-1]; err != nil {
		return err
	}
	replies, ok := res[len(res)-1].([]any)
	if !ok {
		return fmt.Errorf("transaction not run: EXEC replied %v", res[len(res)-1])
	}
	for _, v := range replies {
		if err, ok := v.(error); ok {
			return err
		}
	}
	return nil
}
