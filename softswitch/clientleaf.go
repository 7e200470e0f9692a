package softswitch

import (
	"encoding/binary"
	"net/netip"

	"github.com/distcache/distcache/dataplane/wire"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// loadMembers is LOAD_MEMBERS of p4src/v1model/client_leaf.p4: member ids
// are taken modulo the member_load register's size.
const loadMembers = 1024

// Indexes of the choices counter.
const (
	choseSpine = 0
	choseLeaf  = 1
)

// clientLeaf is the control ClientLeafIngress of
// p4src/v1model/client_leaf.p4 over one configured state (apply), and
// what the software switch does around it on its sockets (process).
// Callers hold the switch's pipeline lock.
type clientLeaf struct {
	clientReadPort, spineOwner, shardLeaf *table
	memberLoad                            *register
	choices                               *counter
	readPort, spine, leaf                 uint32 // the actions' ids

	// relay is the software switch's own, not the program's: see process.
	relay relay
}

func newClientLeaf(s *state) (*clientLeaf, error) {
	rl, err := newRelay()
	if err != nil {
		return nil, err
	}
	return &clientLeaf{
		clientReadPort: s.table("client_read_port"), spineOwner: s.table("spine_owner"), shardLeaf: s.table("shard_leaf"),
		memberLoad: s.register("member_load"), choices: s.counter("choices"),
		readPort: s.byName["read_port"], spine: s.byName["spine"], leaf: s.byName["leaf"],
		relay: rl,
	}, nil
}

// candidate is one of the switches a read may go to: the spine or the
// storage leaf action's parameters, with the read port of the packet's
// shard.
type candidate struct {
	id  uint32
	dst netip.AddrPort
}

// apply runs ClientLeafIngress on p: a GET_REPLY with telemetry teaches
// member_load its sender's load; a GET to a read port of the leaf goes to
// the less loaded of the key's spine and storage leaf (the spine on equal
// loads: to_leaf = leaf load < spine load), or to the one it has, p.dst
// rewritten to that switch's read port of the shard. Anything else keeps
// its destination (the program forwards it by IPv4).
func (l *clientLeaf) apply(p *packet, _ uint64, _ func(HotKey)) {
	switch op := p.op(); {
	case op == wire.OpGetReply && p.flags()&byte(wire.FlagTelemetry) != 0:
		node, load := p.telemetry()
		l.memberLoad.write(node&(loadMembers-1), uint64(load))
	case op == wire.OpGet:
		l.applyClientReadPort(p)
		if p.role != roleReads {
			return
		}
		spine, hasSpine := l.applySpineOwner(p)
		leaf, hasLeaf := l.applyShardLeaf(p)
		toLeaf := hasLeaf
		if hasSpine && hasLeaf {
			s := l.memberLoad.read(spine.id & (loadMembers - 1))
			lf := l.memberLoad.read(leaf.id & (loadMembers - 1))
			toLeaf = lf < s
		}
		switch {
		case toLeaf:
			l.choices.count(choseLeaf, len(p.b))
			p.dst = leaf.dst
		case hasSpine:
			l.choices.count(choseSpine, len(p.b))
			p.dst = spine.dst
		}
	}
}

func (l *clientLeaf) applyClientReadPort(p *packet) {
	var kb [10]byte
	a4 := p.dst.Addr().As4()
	var pb [2]byte
	binary.BigEndian.PutUint16(pb[:], p.dst.Port())
	e := l.clientReadPort.lookup(appendKey(appendKey(kb[:0], pipelines.StripZeros(a4[:])), pipelines.StripZeros(pb[:])))
	if e == nil || e.action != l.readPort {
		p.role = roleNone // not_a_read_port
		return
	}
	p.role, p.shard = roleReads, uint32(e.params[0])
}

// applySpineOwner matches key_digest[127:64], the key's place on the
// spine layer's ring, against spine_owner's ranges.
func (l *clientLeaf) applySpineOwner(p *packet) (candidate, bool) {
	e := l.spineOwner.lookupRange(binary.BigEndian.Uint64(p.digest()[:8]))
	if e == nil || e.action != l.spine {
		return candidate{}, false // no_spine
	}
	return l.target(e, p.shard), true
}

func (l *clientLeaf) applyShardLeaf(p *packet) (candidate, bool) {
	var kb [5]byte
	var sb [4]byte
	binary.BigEndian.PutUint32(sb[:], p.shard)
	e := l.shardLeaf.lookup(appendKey(kb[:0], pipelines.StripZeros(sb[:])))
	if e == nil || e.action != l.leaf {
		return candidate{}, false // no_leaf
	}
	return l.target(e, p.shard), true
}

// target is the candidate of the action spine(id, addr, base_port) or
// leaf(id, addr, base_port): its read port of shard is base_port + 1 +
// shard[15:0], in 16 bits as the program adds.
func (l *clientLeaf) target(e *entry, shard uint32) candidate {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], uint32(e.params[1]))
	port := uint16(e.params[2]) + 1 + uint16(shard)
	return candidate{id: uint32(e.params[0]), dst: netip.AddrPortFrom(netip.AddrFrom4(a), port)}
}

// process runs a datagram that arrived on the switch's port p.dst through
// the client leaf as the software switch can: with UDP sockets it cannot
// forward a client's read with the client's source address, nor receive
// a reply addressed to the client, as a ToR in the clients' path does.
// It relays instead, with the cache switch program's relay registers
// (relay.go): the read the program sends to a switch leaves from the
// leaf's port it came in on under a sequence number of the leaf's own,
// and the switch's reply, readdressed to the client, runs through the
// program (which learns the switch's load from it) and leaves by the same
// port. Everything the program would forward by IPv4 unchanged is
// dropped: there is no other host behind a software switch.
func (l *clientLeaf) process(p *packet, now uint64, report func(HotKey)) {
	local := p.dst
	switch p.op() {
	case wire.OpGetReply:
		if !l.relay.reply(p) {
			return
		}
		l.apply(p, now, report)
	case wire.OpGet:
		l.apply(p, now, report)
		if p.dst == local {
			p.drop = true // not a read port, or no candidate: forwarded by IPv4 on a switch
			return
		}
		l.relay.request(p, local, p.dst)
	default:
		p.drop = true
	}
}
