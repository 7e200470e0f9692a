package softswitch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/distcache/distcache/dataplane/wire"
	pipelines "github.com/distcache/distcache/stratum_pipelines"
)

// relaySlots is RELAY_SLOTS of p4src/include/params.p4.
const relaySlots = 65536

// relay is the cache switch program's relay registers (cache.p4): a read
// sent on under a sequence number of the switch's own, with its client's
// address, port and sequence number, so that the reply finds its way
// back. The cache switch relays its misses to the shims with it; the
// software client leaf relays the reads it sends to a spine or storage
// leaf with registers of the same declarations (clientleaf.go).
type relay struct {
	clientAddr, clientPort, clientSeq, seq, next *register
}

// relayOf is the relay of the registers reg names.
func relayOf(reg func(name string) *register) relay {
	return relay{clientAddr: reg("relay_client_addr"), clientPort: reg("relay_client_port"),
		clientSeq: reg("relay_client_seq"), seq: reg("relay_seq"), next: reg("relay_next")}
}

// newRelay is a relay of its own: registers declared as the cache switch
// program declares its relay registers, held by the software switch
// outside any P4Info.
func newRelay() (relay, error) {
	info, err := pipelines.ProgramP4Info(Program)
	if err != nil {
		return relay{}, fmt.Errorf("cannot declare the relay registers: %w", err)
	}
	decl := map[string]*p4configv1.Register{}
	for _, r := range info.Registers {
		decl[r.Preamble.Name] = r
	}
	var errs error
	// Only the relay's registers are made: the program's others are large
	// and unused here.
	rl := relayOf(func(name string) *register {
		d, ok := decl[name]
		if !ok {
			return nil
		}
		reg, err := newRegister(d)
		errs = errors.Join(errs, err)
		return reg
	})
	if errs != nil {
		return relay{}, fmt.Errorf("cannot declare the relay registers: %w", errs)
	}
	if rl.clientAddr == nil || rl.clientPort == nil || rl.clientSeq == nil || rl.seq == nil || rl.next == nil {
		return relay{}, fmt.Errorf("cannot declare the relay registers: %s lacks one", Program)
	}
	return rl, nil
}

// relaySlot is the CRC-32 of the client's address, port and sequence
// number modulo RELAY_SLOTS, as v1model's hash(crc32) computes it.
func relaySlot(client netip.AddrPort, seq uint64) uint32 {
	var b [14]byte
	a := client.Addr().As4()
	copy(b[:4], a[:])
	binary.BigEndian.PutUint16(b[4:], client.Port())
	binary.BigEndian.PutUint64(b[6:], seq)
	return crc32.ChecksumIEEE(b[:]) % relaySlots
}

// request sends p, a read from its client p.src, from the switch's port
// local to to, under the client's relay slot's sequence number. A
// client's retransmission and its MORE find the same slot; a MORE whose
// slot went to another read is dropped.
func (rl *relay) request(p *packet, local, to netip.AddrPort) {
	seq := p.seq()
	r := relaySlot(p.src, seq)
	a := p.src.Addr().As4()
	addr := uint64(binary.BigEndian.Uint32(a[:]))
	relayed := rl.seq.read(r)
	if rl.clientAddr.read(r) != addr || rl.clientPort.read(r) != uint64(p.src.Port()) || rl.clientSeq.read(r) != seq {
		if p.op() == wire.OpMore {
			p.drop = true
			return
		}
		n := rl.next.read(0) + 1
		rl.next.write(0, n)
		relayed = n<<16 | uint64(r)
		rl.clientAddr.write(r, addr)
		rl.clientPort.write(r, uint64(p.src.Port()))
		rl.clientSeq.write(r, seq)
		rl.seq.write(r, relayed)
	}
	p.src, p.dst = local, to
	p.setSeq(relayed)
}

// reply readdresses p, a reply to a relayed read, to its client, from the
// port it came in on, under the client's sequence number; false (and p
// dropped) when no relay slot holds its sequence number.
func (rl *relay) reply(p *packet) bool {
	seq := p.seq()
	r := uint32(seq & 0xffff)
	if relayed := rl.seq.read(r); relayed != seq || relayed == 0 {
		p.drop = true
		return false
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], uint32(rl.clientAddr.read(r)))
	client := netip.AddrPortFrom(netip.AddrFrom4(a), uint16(rl.clientPort.read(r)))
	p.setSeq(rl.clientSeq.read(r))
	p.sendFromReadPort(client)
	return true
}
