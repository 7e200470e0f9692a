package client

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
	"github.com/distcache/distcache/routing"
)

// errWentElsewhere ends a read's first request when the read goes on
// without it: its hedge answered, or the node stalled.
var errWentElsewhere = errors.New("the read went on at another candidate")

// hedged is what a read's hedge got: the candidate it asked (-1: none was
// left to ask) and getFromNode's results.
type hedged struct {
	j     int
	res   Result
	label string
	s     step
	err   error
}

// readNode is one read attempt at cache candidate cands[i], hedged. When the
// node has not answered after its hedge delay (hedgeDelay), the read also asks the least
// loaded candidate not tried yet for its copy (wire.FlagCacheOnly: a hit,
// or a refusal without a backend read, so hedging never adds storage
// load), and whichever of the two gives a final answer first wins; the
// other request is abandoned. Reads are idempotent and either answer is
// one the read may linearize to. When the hedge finds no copy and the
// first node is stalled (it has answered nothing this client sent it in
// the last HedgeDelay: dead, paused or slow, routing.WithStallAfter), the
// first request is abandoned too and the read goes on (stepRetry) with the
// hedge's candidate left untried, so the next attempt reads it in full. A
// dead, paused or slow node then costs a read about HedgeDelay rather than
// AttemptTimeout, while a miss that is only waiting for storage is left to
// finish.
//
// It returns getFromNode's results for the answer it took and adds the
// candidates it used up to tried. A hedge does not count as one of the
// read's Attempts: it asks for a copy only, and each attempt hedges at most
// once. An abandoned first request stays in flight in the load table until its
// AttemptTimeout would have ended it (abandonLater): the node did not
// answer it, and reads keep passing over the node until then rather than
// probing it with every read; then, if the node answered nothing since,
// it is skipped for FailBackoff as after any timeout.
func (c *Client) readNode(ctx context.Context, v *view, cands []partmap.Candidate, i int, tried *uint64, kb []byte, mayRefresh bool) (Result, string, step, error) {
	*tried |= 1 << i
	if c.cfg.HedgeDelay <= 0 {
		return c.getFromNode(ctx, v, cands[i], kb, mayRefresh, 0)
	}
	skip := *tried                                // the candidates the hedge may not choose
	pctx, pcancel := context.WithCancelCause(ctx) // the first request's
	defer pcancel(nil)
	hctx, hcancel := context.WithCancel(ctx) // the hedge's; ended when the first request answers
	defer hcancel()
	h := make(chan hedged, 1)
	primary := routing.NodeID(cands[i].Node)
	timer := time.AfterFunc(c.hedgeDelay(v.readAddr(cands[i])), func() {
		j := c.choose(v, cands, skip, c.now())
		if j < 0 {
			h <- hedged{j: -1}
			return
		}
		c.stats.hedges.Add(1)
		res, label, s, err := c.getFromNode(hctx, v, cands[j], kb, false, wire.FlagCacheOnly)
		if hctx.Err() == nil && (s == stepDone || c.table.Stalled(primary, c.now())) {
			pcancel(errWentElsewhere)
		}
		h <- hedged{j: j, res: res, label: label, s: s, err: err}
	})
	res, label, s, err := c.getFromNode(pctx, v, cands[i], kb, mayRefresh, 0)
	if timer.Stop() {
		return res, label, s, err // answered before the hedge was due
	}
	if s == stepDone && pctx.Err() == nil {
		return res, label, s, err // a final answer first: the hedge is abandoned
	}
	hr := <-h
	switch {
	case hr.j < 0 || ctx.Err() != nil:
		return res, label, s, err
	case hr.s == stepDone:
		c.stats.hedgeWins.Add(1)
		*tried |= 1 << hr.j
		return hr.res, hr.label, hr.s, hr.err
	case errors.Is(context.Cause(pctx), errWentElsewhere):
		// No copy at the hedge's candidate and the first node stalled: read
		// the candidate in full next.
		return hr.res, hr.label, stepRetry, hr.err
	}
	*tried |= 1 << hr.j
	return res, label, s, err
}

// abandonLater takes a request sent to node at sent off the load table's
// count when its AttemptTimeout would have ended it. If by then the node
// has answered nothing sent after it, the request timed out like any
// other: it counts in Stats.Timeouts and the node is skipped for
// FailBackoff. Otherwise a dead or paused node that every read hedges
// away from would look idle again each AttemptTimeout, and the next reads
// would each pay HedgeDelay to find it stalled once more.
func (c *Client) abandonLater(node routing.NodeID, sent int64) {
	expire := func() {
		c.table.Abandoned(node) // before the check: this request no longer counts
		if !c.table.AnsweredAfter(node, sent) {
			c.stats.timeouts.Add(1)
			c.markFailed(node)
		}
	}
	d := time.Duration(sent + int64(c.cfg.AttemptTimeout) - c.now())
	if d <= 0 {
		expire()
		return
	}
	time.AfterFunc(d, expire)
}

// hedgeDelay is how long a read waits for the node at addr before it
// hedges: HedgeDelay, or the node's retransmission timeout when its round
// trips have been longer (transport.Endpoint.RTT: srtt + 4·rttvar), up to
// AttemptTimeout. A node that answers in microseconds is hedged after
// HedgeDelay as before; one whose replies are slow because it is busy — a
// server at its CPU limit — is not sent every read twice, which would
// only add to its load and to its peer's.
func (c *Client) hedgeDelay(addr netip.AddrPort) time.Duration {
	d := c.cfg.HedgeDelay
	if srtt, rttvar, ok := c.ep.RTT(addr); ok {
		d = max(d, min(srtt+4*rttvar, c.cfg.AttemptTimeout))
	}
	return d
}
