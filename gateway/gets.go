package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/distcache/distcache/client"
)

// asyncStore is a Store that reads and writes without waiting
// (client.Client.GetManyFunc and PutManyFunc): the event loops read
// their GET pipelines and write their SET pipelines with it. Without it
// they run every pipeline as the goroutine server does.
type asyncStore interface {
	GetManyFunc(ctx context.Context, keys []string, res []client.Result, errs []error, done func())
	PutManyFunc(ctx context.Context, keys []string, values [][]byte, errs []error, done func())
	IncrByManyFunc(ctx context.Context, keys []string, deltas []int64, results []int64, errs []error, done func())
	CommandManyFunc(ctx context.Context, keys []string, args [][][]byte, replies [][]byte, errs []error, done func())
}

// roundKind is what an event loop's round of commands does.
type roundKind uint8

const (
	notARound     roundKind = iota
	roundGets               // reads: GET key, MGET key...
	roundSets               // plain SETs of distinct keys: SET key value
	roundIncrs              // INCR key, DECR key, of distinct keys
	roundCommands           // commands of other types (shimcmds.go), of distinct keys
)

// roundOf says whether a pipeline can join an event loop's round, and
// how many keys it brings: GETs and MGETs only, or plain SETs of distinct
// keys only, or INCRs and DECRs of distinct keys only, or commands of
// other types of distinct keys only, from an authenticated session, no
// more than MaxInFlight keys in all.
func (s *Server) roundOf(sess *session, cmds []redcon.Command) (roundKind, int) {
	if len(cmds) == 0 || sess.queuing() {
		return notARound, 0
	}
	kind := roundGets
	switch first := lookup(cmds[0].Args[0]); {
	case first == setCommand:
		kind = roundSets
	case first == incrCommand || first == decrCommand:
		kind = roundIncrs
	case first != nil && first.atShim:
		kind = roundCommands
	}
	var seen map[uint64]struct{}
	n := 0
	for _, cmd := range cmds {
		c := lookup(cmd.Args[0])
		switch {
		case kind == roundGets && c == getCommand && len(cmd.Args) == 2:
			n++
		case kind == roundGets && c == mgetCommand && len(cmd.Args) >= 2:
			n += len(cmd.Args) - 1
		case kind == roundSets && c == setCommand && len(cmd.Args) == 3,
			kind == roundIncrs && (c == incrCommand || c == decrCommand) && len(cmd.Args) == 2,
			kind == roundCommands && c != nil && c.atShim && c.arityOK(len(cmd.Args)):
			n++
			if len(cmds) == 1 {
				break
			}
			if seen == nil {
				seen = make(map[uint64]struct{}, len(cmds))
			}
			h := keyHash(cmd.Args[1])
			if _, ok := seen[h]; ok {
				return notARound, 0 // the same key twice: they run in order
			}
			seen[h] = struct{}{}
		default:
			return notARound, 0
		}
	}
	if n > s.cfg.MaxInFlight || !s.admittedAll(sess) {
		return notARound, 0
	}
	return kind, n
}

// splitGets splits the commands idx of a batch into its plain GETs (a key
// each, from an authenticated session), which runGets reads together, and
// the others.
func (s *Server) splitGets(sess *session, cmds []redcon.Command, idx []int) (gets, others []int) {
	if !s.admittedAll(sess) {
		return nil, idx
	}
	for _, i := range idx {
		if args := cmds[i].Args; len(args) == 2 && lookup(args[0]) == getCommand {
			gets = append(gets, i)
		} else {
			others = append(others, i)
		}
	}
	if len(gets) < 2 {
		return nil, idx // one GET runs as any command does
	}
	return gets, others
}

// runGets answers the GETs idx of a batch on the calling goroutine with
// Store.GetMany: their first requests leave together and the goroutine
// wakes once for their replies, where a command each would cost a worker
// hand-off and a wait of its own. The GETs are admitted into the cluster
// together (admission), in rounds of MaxInFlight when there are more;
// those not admitted before ctx ends fail as runBatch's do.
func (s *Server) runGets(ctx context.Context, sess *session, cmds []redcon.Command, idx []int, out [][]byte) {
	start := time.Now()
	resp3 := sess.resp3()
	g := &sess.pipe.gets
	for done := 0; done < len(idx); {
		n := s.admit.acquire(ctx, len(idx)-done)
		if n == 0 {
			for _, i := range idx[done:] {
				out[i] = appendError(nil, waitingError(ctx))
				s.observe(getCommand, out[i], time.Since(start))
			}
			return
		}
		round := idx[done : done+n]
		keys, res, errs := g.round(cmds, round)
		s.cfg.Store.GetMany(ctx, keys, res, errs)
		s.admit.release(n)
		took := time.Since(start)
		replies := make([]byte, 0, repliesLen(res))
		for j, i := range round {
			from := len(replies)
			replies = appendValue(replies, res[j].Value, errs[j], resp3)
			out[i] = replies[from:len(replies):len(replies)]
			s.observe(getCommand, out[i], took)
		}
		g.release()
		done += n
	}
}

// getScratch holds one round of runGets: the keys read, as substrings of
// one string, and their results.
type getScratch struct {
	keys []string
	res  []client.Result
	errs []error
}

// round fills g for the GETs round of cmds and returns its keys and the
// results to fill in.
func (g *getScratch) round(cmds []redcon.Command, round []int) ([]string, []client.Result, []error) {
	size := 0
	for _, i := range round {
		size += len(cmds[i].Args[1])
	}
	var b strings.Builder
	b.Grow(size)
	for _, i := range round {
		b.Write(cmds[i].Args[1])
	}
	all := b.String()
	g.keys = g.keys[:0]
	for off, i := 0, 0; i < len(round); i++ {
		n := len(cmds[round[i]].Args[1])
		g.keys = append(g.keys, all[off:off+n])
		off += n
	}
	g.res, g.errs = resized(g.res, len(round)), resized(g.errs, len(round))
	return g.keys, g.res, g.errs
}

// release drops what the last round read, so that the scratch space keeps
// no key or value alive.
func (g *getScratch) release() {
	clear(g.keys)
	clear(g.res)
	clear(g.errs)
}

// repliesLen is about the length of the GET replies to res: a value's bulk
// string, or a short error or null.
func repliesLen(res []client.Result) int {
	n := 0
	for _, r := range res {
		n += len(r.Value) + 16
	}
	return n
}
