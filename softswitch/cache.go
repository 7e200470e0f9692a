package softswitch

import (
	"encoding/binary"
	"net/netip"

	"github.com/distcache/distcache/dataplane/wire"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// Sizes of p4src/include/params.p4 the control computes with.
const (
	valueWordsPerSlot = 16
	// loadWindow is LOAD_WINDOW, in the ingress timestamp's microseconds.
	loadWindow = 100_000
)

// cache is the control DistCacheCache of p4src/v1model/cache.p4 over one
// configured state: its tables, registers and counters resolved by name
// once, applied in the program's order. Callers hold the switch's
// pipeline lock.
type cache struct {
	switchAddress, identity, storageRoute, cacheLookup *table

	valueWords, valueLen, valid, version, fillSeq *register
	leaseUntil, clock, load, loadWindowStart      *register
	sketch                                        [4]*register
	bloom                                         [3]*register
	hotThreshold                                  *register
	relay                                         relay

	cacheHits, datagrams *counter

	serveReads, serveCoherence, toShim, setIdentity, cached uint32
	hotKey                                                  uint32 // the hot_key_t digest's id
}

func newCache(s *state) *cache {
	c := &cache{
		switchAddress: s.table("switch_address"), identity: s.table("identity"),
		storageRoute: s.table("storage_route"), cacheLookup: s.table("cache_lookup"),
		valueWords: s.register("value_words"), valueLen: s.register("value_len"), valid: s.register("valid"),
		version: s.register("version"), fillSeq: s.register("fill_seq"), leaseUntil: s.register("lease_until"),
		clock: s.register("clock"), load: s.register("load"), loadWindowStart: s.register("load_window_start"),
		hotThreshold: s.register("hot_threshold"),
		relay:        relayOf(s.register),
		cacheHits:    s.counter("cache_hits"), datagrams: s.counter("datagrams"),
		serveReads: s.byName["serve_reads"], serveCoherence: s.byName["serve_coherence"],
		toShim: s.byName["to_shim"], setIdentity: s.byName["set_identity"], cached: s.byName["cached"],
		hotKey: s.byName["hot_key_t"],
	}
	for i := range c.sketch {
		c.sketch[i] = s.register("sketch_row" + string(rune('0'+i)))
	}
	for i := range c.bloom {
		c.bloom[i] = s.register("bloom" + string(rune('0'+i)))
	}
	return c
}

// HotKey is one hot_key_t digest: an uncached key, its digest and its
// Count-Min estimate.
type HotKey struct {
	Digest [16]byte
	Key    []byte // at most 32 bytes: only keys the switch parses are counted
	Count  uint16
}

// apply runs the control on p at ingress time now (microseconds); a hot
// key is reported through report.
func (c *cache) apply(p *packet, now uint64, report func(HotKey)) {
	c.clock.write(0, now)
	c.applySwitchAddress(p)
	if p.role != roleNone {
		c.datagrams.count(uint32(p.op()), len(p.b))
		c.applyIdentity(p)
	}
	held := false
	if p.role != roleNone && p.cacheable {
		var kb [17]byte
		if e := c.cacheLookup.lookup(appendKey(kb[:0], pipelines.StripZeros(p.digest()))); e != nil {
			p.slot, held = uint32(e.params[0]), true
		}
	}
	switch p.role {
	case roleReads:
		c.reads(p, held, now, report)
	case roleCoherence:
		c.coherence(p, held)
	}
}

// process runs the control on a datagram that arrived on the switch's
// port p.dst; what is not addressed to the switch is dropped (no route on
// loopback).
func (c *cache) process(p *packet, now uint64, report func(HotKey)) {
	c.apply(p, now, report)
	if p.role == roleNone {
		p.drop = true
	}
}

func (c *cache) applySwitchAddress(p *packet) {
	var kb [10]byte
	a4, port := p.dst.Addr().As4(), p.dst.Port()
	var pb [2]byte
	binary.BigEndian.PutUint16(pb[:], port)
	key := appendKey(appendKey(kb[:0], pipelines.StripZeros(a4[:])), pipelines.StripZeros(pb[:]))
	e := c.switchAddress.lookup(key)
	switch {
	case e == nil:
		p.role = roleNone
	case e.action == c.serveReads:
		p.role, p.shard = roleReads, uint32(e.params[0])
	case e.action == c.serveCoherence:
		p.role = roleCoherence
	}
}

func (c *cache) applyIdentity(p *packet) {
	if e := c.identity.def; e != nil && e.action == c.setIdentity {
		p.nodeID, p.mapVersion = uint32(e.params[0]), e.params[1]
	}
}

func (c *cache) applyStorageRoute(p *packet) {
	var kb [5]byte
	var sb [4]byte
	binary.BigEndian.PutUint32(sb[:], p.shard)
	e := c.storageRoute.lookup(appendKey(kb[:0], pipelines.StripZeros(sb[:])))
	if e == nil || e.action != c.toShim {
		p.drop = true // no_shim
		return
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], uint32(e.params[0]))
	p.shim = netip.AddrPortFrom(netip.AddrFrom4(a), uint16(e.params[1]))
}

// countLoad is the action count_load; peekLoad is peek_load.
func (c *cache) countLoad(p *packet, now uint64) {
	current, last := c.load.read(0), c.load.read(1)
	if now-c.loadWindowStart.read(0) >= loadWindow {
		last, current = current, 0
		c.loadWindowStart.write(0, now)
		c.load.write(1, last)
	}
	current++
	c.load.write(0, current)
	p.load = uint32(max(current, last))
}

func (c *cache) peekLoad(p *packet) { p.load = uint32(max(c.load.read(0), c.load.read(1))) }

func (c *cache) reads(p *packet, held bool, now uint64, report func(HotKey)) {
	c.applyStorageRoute(p)
	op := p.op()
	if op == wire.OpGet {
		c.countLoad(p, now)
	} else {
		c.peekLoad(p)
	}
	hit := false
	switch {
	case op == wire.OpGet && held:
		hit = c.valid.read(p.slot) == 1 && now < c.leaseUntil.read(0)
	case op == wire.OpGet && p.cacheable:
		c.countUncached(p, report)
	}
	switch {
	case hit:
		c.answerHit(p)
	case op == wire.OpGet && p.flags()&byte(wire.FlagCacheOnly) != 0:
		p.reflect(wire.OpGetReply)
		p.setStatus(wire.StatusUnavailable)
		p.stamp()
	case op == wire.OpGet || op == wire.OpMore:
		c.relayRequest(p)
	case op == wire.OpGetReply:
		c.relayReply(p)
	default:
		p.drop = true
	}
}

// answerHit turns the GET into its GET_REPLY with the slot's value.
func (c *cache) answerHit(p *packet) {
	c.cacheHits.count(p.slot, len(p.b))
	n := int(c.valueLen.read(p.slot))
	var value [valueWordsPerSlot * 8]byte
	base := p.slot * valueWordsPerSlot
	for i := 0; i*8 < n; i++ {
		binary.BigEndian.PutUint64(value[i*8:], c.valueWords.read(base+uint32(i)))
	}
	p.setValueVersion(c.version.read(p.slot))
	p.reflect(wire.OpGetReply)
	p.setFlags(p.flags() | byte(wire.FlagHit))
	p.setValue(value[:n])
	p.stamp()
}

// countUncached is count_uncached with the hot-key report after it.
func (c *cache) countUncached(p *packet, report func(HotKey)) {
	m := uint16(0xffff)
	for i, row := range c.sketch {
		idx := p.digestWord(i)
		v := min(row.read(idx)+1, 0xffff) // |+|: saturating
		row.write(idx, v)
		m = min(m, uint16(v))
	}
	p.hotCount = m
	threshold := uint16(c.hotThreshold.read(0))
	if threshold == 0 || m < threshold {
		return
	}
	all := uint64(1)
	for i, b := range c.bloom {
		all &= b.read(p.digestWord(4 + i))
	}
	if all != 0 {
		return
	}
	for i, b := range c.bloom {
		b.write(p.digestWord(4+i), 1)
	}
	var r HotKey
	copy(r.Digest[:], p.digest())
	r.Key = append([]byte(nil), p.b[wire.HeaderLen:wire.HeaderLen+p.keyLen]...)
	r.Count = m
	report(r)
}

// relayRequest sends a miss (or a client's MORE) to the shim under the
// client's relay slot's sequence number.
func (c *cache) relayRequest(p *packet) { c.relay.request(p, p.dst, p.shim) }

// relayReply turns the shim's reply into the reply to the client,
// stamped with the switch's telemetry.
func (c *cache) relayReply(p *packet) {
	if c.relay.reply(p) {
		p.stamp()
	}
}

// coherence is the coherence port's part of the control.
func (c *cache) coherence(p *packet, held bool) {
	var ver uint64
	if held {
		ver = c.version.read(p.slot)
	}
	switch op := p.op(); op {
	case wire.OpInvalidate:
		if held {
			c.valid.write(p.slot, 0)
			if v := p.valueVersion(); v > ver {
				c.version.write(p.slot, v)
			}
		}
		p.reflect(wire.OpInvalidateAck)
		p.setFlags(0)
		if held {
			p.setFlags(byte(wire.FlagHit))
		}
		p.stamp()
	case wire.OpUpdate, wire.OpFetchReply:
		seq, valid := uint64(0), uint64(1)
		if held {
			seq, valid = c.fillSeq.read(p.slot), c.valid.read(p.slot)
		}
		applyUpdate := op == wire.OpUpdate && ver == p.valueVersion()
		applyFill := op == wire.OpFetchReply && valid == 0 && seq == p.seq() && p.valueVersion() >= ver
		if held && p.valueFits && p.status() == wire.StatusOK && (applyUpdate || applyFill) {
			c.writeValue(p)
		}
		if op == wire.OpUpdate {
			p.setValue(nil) // the acknowledgement carries the key, not the value
			p.reflect(wire.OpUpdateAck)
			p.setFlags(0)
			p.stamp()
		} else {
			p.toCPU = true
		}
	case wire.OpPing:
		p.reflect(wire.OpPong)
		p.stamp()
	default:
		p.drop = true
	}
}

// writeValue stores the packet's value in the slot and makes it valid.
func (c *cache) writeValue(p *packet) {
	v := p.value()
	base := p.slot * valueWordsPerSlot
	for i := 0; i*8 < len(v); i++ {
		var w [8]byte
		copy(w[:], v[i*8:])
		c.valueWords.write(base+uint32(i), binary.BigEndian.Uint64(w[:]))
	}
	c.valueLen.write(p.slot, uint64(len(v)))
	c.version.write(p.slot, p.valueVersion())
	c.valid.write(p.slot, 1)
}
