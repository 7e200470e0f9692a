package transport

import (
	"fmt"
	"net/netip"

	"github.com/distcache/distcache/dataplane/antireplay"
	"github.com/distcache/distcache/dataplane/wire"
	"github.com/distcache/distcache/placement/partmap"
)

// ReplayMode is how an endpoint with a data-plane key protects signed
// datagrams against replays (Config.Replay). Each mode accepts what the
// one before it sends, so a cluster moves from one to the next a process
// at a time: every process to a version that knows stamps (accept), then
// every process to stamp, then every process to require.
type ReplayMode int

// Replay modes.
const (
	// ReplayAccept sends signed datagrams without a stamp, as versions
	// before stamps do, and accepts them with or without one (a stamp is
	// checked).
	ReplayAccept ReplayMode = iota
	// ReplayStamp stamps signed datagrams and accepts them with or
	// without a stamp.
	ReplayStamp
	// ReplayRequire stamps signed datagrams and drops those received
	// without a stamp: only here is every signed datagram protected.
	ReplayRequire
)

var replayModeNames = [...]string{"accept", "stamp", "require"}

func (m ReplayMode) String() string {
	if m >= 0 && int(m) < len(replayModeNames) {
		return replayModeNames[m]
	}
	return fmt.Sprintf("ReplayMode(%d)", int(m))
}

// ParseReplayMode parses "accept", "stamp" or "require".
func ParseReplayMode(s string) (ReplayMode, error) {
	for i, n := range replayModeNames {
		if s == n {
			return ReplayMode(i), nil
		}
	}
	return 0, fmt.Errorf("cannot parse replay mode %q: want accept, stamp or require", s)
}

// MapReplayMode is the mode a partition map's setting names
// (partmap.Map.ReplayProtection).
func MapReplayMode(r partmap.ReplayProtection) ReplayMode {
	switch r {
	case partmap.ReplayStamp:
		return ReplayStamp
	case partmap.ReplayRequire:
		return ReplayRequire
	}
	return ReplayAccept
}

// ReplayMode is the mode the endpoint uses now: Config.Replay, raised by
// the partition maps its owner installed (FollowMap).
func (e *Endpoint) ReplayMode() ReplayMode { return ReplayMode(e.mode.Load()) }

// FollowMap makes the endpoint use the replay mode of m, a partition map
// its owner installs, or Config.Replay when that is stronger: the
// configured mode is a floor that a map only raises. It takes effect
// with the next datagram sent or received, without a restart, and
// reports whether the mode changed. A map may lower the mode again, down
// to the floor; it does when the operator is told to
// (spec.dataPlane.replayProtection Off).
func (e *Endpoint) FollowMap(m *partmap.Map) bool {
	mode := max(e.cfg.Replay, MapReplayMode(m.ReplayProtection))
	old := ReplayMode(e.mode.Swap(int32(mode)))
	if old == mode {
		return false
	}
	if e.cfg.Auth != nil {
		e.cfg.Logger.Info("replay protection changed by the partition map", "from", old, "to", mode, "map_version", m.Version)
	}
	return true
}

// trailer is the number of bytes the endpoint's datagrams of op to peer
// carry after their value bytes (wire.Trailer).
func (e *Endpoint) trailer(op wire.Op, peer netip.AddrPort) int {
	signs := e.signs(op, peer)
	return wire.Trailer(signs, signs && e.ReplayMode() >= ReplayStamp)
}

// signs says whether the endpoint signs messages of op to peer.
func (e *Endpoint) signs(op wire.Op, peer netip.AddrPort) bool {
	return e.cfg.Auth != nil && wire.Authenticated(op) && (e.cfg.Unsigned == nil || !e.cfg.Unsigned(peer))
}

// appendDatagram encodes the datagram of m to peer from value offset off,
// signed when m's op is authenticated and the endpoint signs for peer.
func (e *Endpoint) appendDatagram(dst []byte, peer netip.AddrPort, m *wire.Message, off int) ([]byte, int, error) {
	if e.signs(m.Op, peer) {
		if e.ReplayMode() >= ReplayStamp {
			st := e.stamps.Stamp()
			return wire.AppendStampedDatagram(dst, m, off, e.cfg.Datagram, e.cfg.Auth, &st)
		}
		return wire.AppendSignedDatagram(dst, m, off, e.cfg.Datagram, e.cfg.Auth)
	}
	return wire.AppendDatagram(dst, m, off, e.cfg.Datagram)
}

// authentic reports whether datagram b (parsed as p) from src may be
// served: it needs a valid tag when its op is authenticated (unless src
// is Unsigned) or it carries one.
func (e *Endpoint) authentic(b []byte, p *wire.Packet, src netip.AddrPort) bool {
	if !p.Has(wire.FlagAuth) {
		return !wire.Authenticated(p.Op) || (e.cfg.Unsigned != nil && e.cfg.Unsigned(src))
	}
	data, tag, ok := wire.Signed(b)
	return ok && e.cfg.Auth.Verify(data, tag)
}

// fresh reports whether signed datagram p (its tag verified) may be
// served: its stamp, if any, is new to the replay filter, and it carries
// one where Config.Replay requires it.
func (e *Endpoint) fresh(p *wire.Packet, src netip.AddrPort) bool {
	if !p.Stamped {
		if e.ReplayMode() != ReplayRequire {
			return true
		}
		e.stats.unstamped[p.Op%opSlots].Add(1)
		e.cfg.Logger.Debug("dropped signed datagram without a stamp", "from", src, "op", p.Op)
		return false
	}
	if v := e.replay.Accept(p.Stamp); v != antireplay.Accepted {
		e.stats.replayRejected[p.Op%opSlots].Add(1)
		e.cfg.Logger.Debug("dropped replayed datagram", "from", src, "op", p.Op, "verdict", v)
		return false
	}
	return true
}
