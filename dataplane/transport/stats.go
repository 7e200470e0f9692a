package transport

import (
	"sync/atomic"

	"github.com/distcache/distcache/dataplane/antireplay"
	"github.com/distcache/distcache/dataplane/wire"
)

// Stats counts an Endpoint's traffic.
type Stats struct {
	DatagramsIn  uint64
	Receives     uint64 // receive system calls that returned datagrams; DatagramsIn/Receives is the mean batch
	DatagramsOut uint64
	Sends        uint64 // send system calls that sent datagrams; DatagramsOut/Sends is the mean batch
	BytesIn      uint64
	BytesOut     uint64
	// BundlesIn and BundlesOut count the bundle datagrams among
	// DatagramsIn and DatagramsOut; BundledIn and BundledOut the messages'
	// datagrams they carried.
	BundlesIn, BundledIn   uint64
	BundlesOut, BundledOut uint64
	Malformed              uint64 // datagrams (or bundles) that failed to parse
	Unhandled              uint64 // requests received without a handler
	UnmatchedReplies       uint64 // replies to no outstanding call (late or duplicate)
	Retransmits            uint64
	SendErrors             uint64
	// MoreIn and MoreOut count the MOREs (flow control, wire.Window)
	// received and sent; MoreStale the MOREs received for a message no
	// longer kept (expired, or pushed out by newer ones).
	MoreIn, MoreOut, MoreStale uint64
	// MACRejected counts, by op, the datagrams dropped for a missing or
	// bad MAC (Config.Auth).
	MACRejected [opSlots]uint64
	// ReplayRejected counts, by op, the signed datagrams whose stamp the
	// replay filter refused; Unstamped those dropped for carrying no
	// stamp (ReplayRequire). Replay has the filter's own counters.
	ReplayRejected [opSlots]uint64
	Unstamped      [opSlots]uint64
	Replay         antireplay.Stats
	Reassembly     wire.ReassemblyStats
}

// MessagesIn is the number of message datagrams received, alone or in
// bundles.
func (s *Stats) MessagesIn() uint64 { return s.DatagramsIn - s.BundlesIn + s.BundledIn }

// MessagesOut is the number of message datagrams sent, alone or in
// bundles.
func (s *Stats) MessagesOut() uint64 { return s.DatagramsOut - s.BundlesOut + s.BundledOut }

// opSlots indexes counters by op: every op Parse accepts is below it.
const opSlots = wire.MaxOp + 1

type counters struct {
	datagramsIn, datagramsOut, bytesIn, bytesOut atomic.Uint64
	receives, sends                              atomic.Uint64
	bundlesIn, bundledIn, bundlesOut, bundledOut atomic.Uint64
	malformed, unhandled, unmatched, retransmits atomic.Uint64
	sendErrors                                   atomic.Uint64
	moreIn, moreOut, moreStale                   atomic.Uint64
	macRejected                                  [opSlots]atomic.Uint64
	replayRejected, unstamped                    [opSlots]atomic.Uint64
}

// Stats returns the counters.
func (e *Endpoint) Stats() Stats {
	s := &e.stats
	st := Stats{
		DatagramsIn: s.datagramsIn.Load(), Receives: s.receives.Load(), DatagramsOut: s.datagramsOut.Load(),
		Sends:     s.sends.Load(),
		BundlesIn: s.bundlesIn.Load(), BundledIn: s.bundledIn.Load(),
		BundlesOut: s.bundlesOut.Load(), BundledOut: s.bundledOut.Load(),
		BytesIn: s.bytesIn.Load(), BytesOut: s.bytesOut.Load(),
		Malformed: s.malformed.Load(), Unhandled: s.unhandled.Load(),
		UnmatchedReplies: s.unmatched.Load(), Retransmits: s.retransmits.Load(),
		SendErrors: s.sendErrors.Load(), Reassembly: e.reasm.Stats(),
		MoreIn: s.moreIn.Load(), MoreOut: s.moreOut.Load(), MoreStale: s.moreStale.Load(),
	}
	for i := range s.macRejected {
		st.MACRejected[i] = s.macRejected[i].Load()
		st.ReplayRejected[i] = s.replayRejected[i].Load()
		st.Unstamped[i] = s.unstamped[i].Load()
	}
	if e.replay != nil {
		st.Replay = e.replay.Stats()
	}
	return st
}
