package shim

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/distcache/distcache/dataplane/transport"
	"github.com/distcache/distcache/dataplane/wire"
)

// The shim's directory of copies, as a multiprocessor cache keeps one: for
// each key, the cache nodes that may hold an entry for it. A write
// invalidates (phase 1) and updates (phase 2) only the key's owners that
// may hold an entry, instead of every owner; most written keys are cached
// nowhere, and their writes then cost no coherence message at all.
//
// Why it is safe. A node gets an entry for a key only from a FETCH this
// shim served, under the key's lock, and the shim records the node in the
// directory before it reads the value: every write that takes the lock
// later invalidates the node. A node's flight of reads (FlagTracked) is
// recorded likewise before the shim checks that no write is in progress.
// A FETCH that reaches the shim after a write that skipped the node reads
// a counter C at least the write's version, so its fill carries the new
// value. The directory starts empty in every run of the shim, but nodes
// may hold entries an earlier run handed out: until a node has dropped
// every entry of this shard on the shim's request (FLUSH, acknowledged),
// every write invalidates it as before. A node that does not know FLUSH
// (an older version) is never flushed, so it is always invalidated. The
// directory keeps up to Config.HolderKeys keys; beyond that it is cleared
// and every node flushed again. Switch members are always invalidated:
// they are filled by their control plane.

// holders is the directory.
type holders struct {
	mu sync.Mutex // guards everything below
	// byKey lists the nodes that fetched each key (or had a tracked read
	// of it) since the directory was last cleared.
	byKey map[string][]netip.AddrPort
	limit int
	// flushed holds the nodes that acknowledged a FLUSH sent in the
	// current epoch: they hold no entry this directory does not list.
	flushed map[netip.AddrPort]bool
	// epoch counts clears: an acknowledgement of a FLUSH sent in an
	// earlier epoch proves nothing about the entries handed out since.
	epoch uint64
	poke  chan struct{} // wakes the flusher (capacity 1)
}

func newHolders(limit int) *holders {
	return &holders{byKey: map[string][]netip.AddrPort{}, flushed: map[netip.AddrPort]bool{}, limit: limit, poke: make(chan struct{}, 1)}
}

// add records that node may hold an entry for key.
func (h *holders) add(key string, node netip.AddrPort) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if slices.Contains(h.byKey[key], node) {
		return
	}
	if len(h.byKey) >= h.limit {
		clear(h.byKey)
		clear(h.flushed)
		h.epoch++
		h.wake()
	}
	h.byKey[key] = append(h.byKey[key], node)
}

// mayHold reports whether node may hold an entry for key.
func (h *holders) mayHold(key string, node netip.AddrPort) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.flushed[node] || slices.Contains(h.byKey[key], node)
}

// unflushed returns the nodes of nodes not flushed in the current epoch,
// and the epoch.
func (h *holders) unflushed(nodes []netip.AddrPort) ([]netip.AddrPort, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []netip.AddrPort
	for _, a := range nodes {
		if !h.flushed[a] {
			out = append(out, a)
		}
	}
	return out, h.epoch
}

// markFlushed records node's acknowledgement of a FLUSH sent in epoch.
func (h *holders) markFlushed(node netip.AddrPort, epoch uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if epoch == h.epoch {
		h.flushed[node] = true
	}
}

// wake asks the flusher to run; h.mu is held or not, it does not block.
func (h *holders) wake() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

// size is the number of keys in the directory.
func (h *holders) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.byKey)
}

// flushRetry is how long the flusher waits before asking again the nodes
// that did not acknowledge.
const flushRetry = time.Second

// flush asks every software cache node of the current map, and of the maps
// it still invalidates under, to drop this shard's entries, until each has
// acknowledged in the current epoch; then it waits for a new map or a
// cleared directory. It runs for the shim's life.
func (s *Shim) flush() {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.holders.poke:
		}
		nodes, epoch := s.holders.unflushed(s.cacheNodes())
		if len(nodes) == 0 {
			continue
		}
		reqs, out := make([]transport.Request, len(nodes)), make([]transport.Reply, len(nodes))
		msgs := make([]wire.Message, len(nodes))
		for i, a := range nodes {
			msgs[i] = wire.Message{Header: wire.Header{Op: wire.OpFlush}, Key: []byte(s.cfg.Shard)}
			reqs[i] = transport.Request{Dst: a, Msg: &msgs[i]}
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.InvalidateTimeout)
		s.ep.CallMany(ctx, time.Now().Add(s.cfg.InvalidateTimeout), reqs, out)
		cancel()
		done := 0
		for i, r := range out {
			if r.Err == nil && r.Msg.Status == wire.StatusOK {
				s.holders.markFlushed(nodes[i], epoch)
				done++
			}
		}
		s.stats.flushes.Add(uint64(done))
		if done < len(nodes) {
			t.Reset(flushRetry)
		}
	}
}

// cacheNodes lists the addresses of the software cache members of the
// current map and of the maps it replaced within PrevMapGrace.
func (s *Shim) cacheNodes() []netip.AddrPort {
	v := s.view.Load()
	if v == nil {
		return nil
	}
	var out []netip.AddrPort
	for _, st := range v.states() {
		for l, layer := range st.p.Map().Layers {
			if layer.Switch {
				continue
			}
			for i := range layer.Members {
				if a := st.addrs.Member(l, i); a.IsValid() && !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// mayHold reports whether a write of key must invalidate owner o: a
// switch, a node not flushed yet, or one the directory lists for key.
func (s *Shim) mayHold(key string, o owner) bool {
	return s.isSwitch(o.addr) || s.holders.mayHold(key, o.addr)
}
