package gateway

import (
	"context"
	"time"

	"github.com/tidwall/redcon"

	"github.com/distcache/distcache/client"
)

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
	keys := make([]string, 0, len(idx))
	res, errs := make([]client.Result, len(idx)), make([]error, len(idx))
	for done := 0; done < len(idx); {
		n := s.admit.acquire(ctx, len(idx)-done)
		if n == 0 {
			for _, i := range idx[done:] {
				out[i] = appendError(nil, waitingError(ctx))
				s.observe(getCommand, out[i], time.Since(start))
			}
			return
		}
		keys = keys[:0]
		for _, i := range idx[done : done+n] {
			keys = append(keys, string(cmds[i].Args[1]))
		}
		s.cfg.Store.GetMany(ctx, keys, res[:n], errs[:n])
		s.admit.release(n)
		for j, i := range idx[done : done+n] {
			out[i] = appendValue(nil, res[j].Value, errs[j], resp3)
			s.observe(getCommand, out[i], time.Since(start))
		}
		done += n
	}
}
