package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/distcache/distcache/placement/hashing"
	"github.com/distcache/distcache/routing"
)

// streamer replays a sampled query stream through the real power-of-k
// router. It never consults the true loads: each simulated client (a client
// ToR in the paper) keeps its own routing.LoadTable, fed only by the load a
// cache node stamps into the replies that client receives, TelemetryDelay
// after the node served the query. Cache nodes measure their load with a
// routing.LoadMeter, as the data plane does. The clock counts query
// arrivals, so one tick is one query of the whole system.
type streamer struct {
	m       *model
	cfg     RoutingConfig
	rng     *rand.Rand
	tables  []*routing.LoadTable
	routers []*routing.Router
	meters  []*routing.LoadMeter // per cache node
	pending dueQueue             // replies in flight
	expiry  dueQueue             // reads to dead nodes, abandoned when due
	now     int64
	cands   []routing.Candidate
	// clientZone and nodeZone are the zones of the clients and of the
	// cache nodes' members (RoutingConfig.Zones); nil without zones.
	clientZone, nodeZone []string
}

// telemetry is a reply on its way back to a client.
type telemetry struct {
	due    int64
	sent   int64
	client int32
	node   uint32
	load   float64
}

func newStreamer(m *model, seed uint64) (*streamer, error) {
	rc := m.cfg.Routing
	s := &streamer{
		m:     m,
		cfg:   rc,
		rng:   rand.New(rand.NewPCG(seed, hashing.Derive(seed, "stream"))),
		cands: make([]routing.Candidate, 0, 4),
	}
	aging := routing.AgingConfig{StaleAfter: int64(rc.StaleAfter), HalfLife: int64(rc.HalfLife)}
	var opts []routing.TableOption
	if rc.StallAfter > 0 {
		opts = append(opts, routing.WithStallAfter(int64(rc.StallAfter)))
	}
	if rc.Zones > 0 {
		for c := range rc.Clients {
			s.clientZone = append(s.clientZone, fmt.Sprintf("zone-%d", c%rc.Zones))
		}
		for v := range m.nodes() {
			s.nodeZone = append(s.nodeZone, m.member(v).Zone)
		}
		if rc.ZoneMargin >= 0 {
			opts = append(opts, routing.WithRemoteMargin(rc.ZoneMargin))
		}
	}
	for c := range rc.Clients {
		t, err := routing.NewLoadTable(aging, opts...)
		if err != nil {
			return nil, fmt.Errorf("cannot start simulated client: %w", err)
		}
		s.tables = append(s.tables, t)
		s.routers = append(s.routers, routing.NewRouter(t, hashing.Derive(seed, fmt.Sprint("client", c))))
	}
	for range m.nodes() {
		mt, err := routing.NewLoadMeter(int64(rc.LoadWindow))
		if err != nil {
			return nil, fmt.Errorf("cannot start simulated cache node: %w", err)
		}
		s.meters = append(s.meters, mt)
	}
	return s, nil
}

// tally counts, per exact rank with several holders, how many of the
// measured reads went to each holder, how many reads went to a failed
// node and were lost, and how many of those a hedge to another holder
// saved.
type tally struct {
	counts [][]float64
	reads  int
	lost   int
	hedged int
	// crossZone counts the measured reads served in another zone than
	// their client's; perNode the measured reads of each cache node.
	crossZone int
	perNode   []float64
}

// run streams queries through the router under plan p. Reads to nodes for
// which dead returns true get no reply, and their sender learns nothing;
// with StallAfter set the sender counts them in flight until
// AttemptTimeout and hedges them to the least loaded other holder that is
// alive (the router's choice among the rest), which serves them; without
// it, or without such a holder, they are lost. The first warmup queries are
// not counted.
func (s *streamer) run(p *plan, queries, warmup int, dead func(v int32) bool) tally {
	t := tally{counts: make([][]float64, len(p.holders)), perNode: make([]float64, s.m.nodes())}
	for k, h := range p.holders {
		if len(h) > 1 {
			t.counts[k] = make([]float64, len(h))
		}
	}
	w := s.m.cfg.WriteRatio
	for q := range queries {
		s.now++
		s.deliver()
		rank := s.m.zipf.Sample(s.rng)
		if rank >= uint64(len(p.holders)) || len(p.holders[rank]) == 0 {
			continue // uncached: served by storage, no cache telemetry
		}
		h := p.holders[rank]
		if w > 0 && s.rng.Float64() < w {
			for _, v := range h {
				s.meters[v].Add(2, s.now) // invalidation and update
			}
			continue
		}
		client := int32(s.rng.IntN(len(s.routers)))
		i := s.choose(client, h)
		v := h[i]
		if q >= warmup {
			t.reads++
			if t.counts[rank] != nil {
				t.counts[rank][i]++
			}
		}
		s.tables[client].Sent(routing.NodeID(s.m.member(int(v)).ID), s.now)
		if dead != nil && dead(v) {
			s.expiry.push(telemetry{due: s.now + int64(s.cfg.AttemptTimeout), client: client, node: s.m.member(int(v)).ID})
			if v = s.hedge(client, h, i, dead); v < 0 {
				if q >= warmup {
					t.lost++
				}
				continue
			}
			if q >= warmup {
				t.hedged++
			}
			s.tables[client].Sent(routing.NodeID(s.m.member(int(v)).ID), s.now)
		}
		if q >= warmup {
			t.perNode[v]++
			if s.remote(client, v) {
				t.crossZone++
			}
		}
		s.reply(client, v)
	}
	return t
}

// remote reports whether node v is in another zone than client.
func (s *streamer) remote(client, v int32) bool {
	return s.nodeZone != nil && s.nodeZone[v] != "" && s.nodeZone[v] != s.clientZone[client]
}

// reply serves a read at node v and sends its telemetry back to client.
func (s *streamer) reply(client, v int32) {
	s.meters[v].Add(1, s.now)
	s.pending.push(telemetry{
		due: s.now + int64(s.cfg.TelemetryDelay), sent: s.now, client: client,
		node: s.m.member(int(v)).ID, load: s.meters[v].Rate(s.now),
	})
}

// hedge is the holder of h other than h[first] that client's hedge goes
// to, -1 if hedging is off or none is alive.
func (s *streamer) hedge(client int32, h []int32, first int, dead func(v int32) bool) int32 {
	if s.cfg.StallAfter == 0 || len(h) < 2 {
		return -1
	}
	rest := make([]int32, 0, len(h)-1)
	for i, v := range h {
		if i != first && !dead(v) {
			rest = append(rest, v)
		}
	}
	if len(rest) == 0 {
		return -1
	}
	return rest[s.choose(client, rest)]
}

// choose asks client's router for one of the holders h.
func (s *streamer) choose(client int32, h []int32) int {
	if len(h) == 1 {
		return 0
	}
	s.cands = s.cands[:0]
	for _, v := range h {
		s.cands = append(s.cands, routing.Candidate{Node: routing.NodeID(s.m.member(int(v)).ID), Capacity: float64(s.m.cfg.ServersPerRack), Remote: s.remote(client, v)})
	}
	i := s.routers[client].Choose(s.cands, s.now)
	if i < 0 {
		i = 0
	}
	return i
}

// deliver hands every reply that has arrived to its client's load table.
func (s *streamer) deliver() {
	for r, ok := s.pending.pop(s.now); ok; r, ok = s.pending.pop(s.now) {
		s.tables[r.client].Answered(routing.NodeID(r.node), r.sent)
		s.tables[r.client].Observe(routing.NodeID(r.node), r.load, s.now)
	}
	for r, ok := s.expiry.pop(s.now); ok; r, ok = s.expiry.pop(s.now) {
		s.tables[r.client].Abandoned(routing.NodeID(r.node))
	}
}

// routedSplit runs the stream for plan p and sets p's read split from the
// router's choices: the fraction of each key's measured reads sent to each
// holder. Keys the stream never sampled are split evenly.
func (m *model) routedSplit(p *plan) error {
	s, err := newStreamer(m, hashing.Derive(m.cfg.Seed, "routing"))
	if err != nil {
		return err
	}
	t := s.run(p, m.cfg.Routing.Queries, m.cfg.Routing.Warmup, nil)
	p.splitEvenly()
	for k, c := range t.counts {
		total := 0.0
		for _, x := range c {
			total += x
		}
		if total == 0 {
			continue
		}
		for i, x := range c {
			p.split[k][i] = x / total
		}
	}
	return nil
}

// dueQueue holds telemetry pushed in due order and hands it out once due.
type dueQueue struct {
	items []telemetry // from index head on
	head  int
}

func (q *dueQueue) push(t telemetry) { q.items = append(q.items, t) }

// pop returns the first item due by now, if any, and compacts the queue
// once more than half of it is consumed.
func (q *dueQueue) pop(now int64) (telemetry, bool) {
	if q.head == len(q.items) || q.items[q.head].due > now {
		if q.head > 1024 && q.head > len(q.items)/2 {
			q.items = q.items[:copy(q.items, q.items[q.head:])]
			q.head = 0
		}
		return telemetry{}, false
	}
	q.head++
	return q.items[q.head-1], true
}
