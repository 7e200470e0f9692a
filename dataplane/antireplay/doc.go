// Package antireplay keeps a captured data-plane datagram from being
// accepted a second time. The MAC (package wireauth) proves who sent a
// datagram, not when: without this package an old UPDATE sent again could
// install a stale value, an old PUT overwrite a newer one, an old
// INVALIDATE knock out copies.
//
// Every signed datagram carries a stamp inside the bytes its tag covers
// (wire.Stamp): the sender's id, its epoch (the Unix time it started), a
// sequence number one higher for each datagram it signs, and the time it
// signed it. A Stamper makes them; a receiver's Filter decides on them.
// A retransmission is signed again, so it carries a new stamp under the
// same request sequence number, and the shim's deduplication of requests
// still applies to it.
//
// The Filter keeps, per sender, the latest epoch accepted and a Window of
// WindowLen (1,024) sequence numbers behind the highest accepted, as
// IPsec's and DTLS's anti-replay windows: a number within the window is
// accepted once, in any order; a duplicate, one further behind, and any
// stamp of an older epoch are refused. A newer epoch (the sender
// restarted) starts a new window.
//
// What a receiver has not seen it cannot remember, so time covers it:
// each shard of the Filter has a floor, and a sender it does not track is
// accepted only with a stamp time after the floor. The floor starts at
// the receiver's start less a skew for clocks (DefaultSkew, 250 ms); when
// a shard is full (Config.Senders, 4,096 by default, over 16 shards) it
// forgets the sender stamped longest ago and raises its floor to that
// sender's latest stamp time. Each entry keeps the floor of the moment
// it was made and refuses any stamp at or before it.
//
// The argument, for one receiver run. (1) No stamp is accepted twice: an
// entry accepts a sequence number of its epoch once (the window), never
// an older epoch, and its epoch only grows; a forgotten entry's stamps
// are all at or before the floor it left, which every later entry of the
// sender keeps and refuses. (2) No stamp of an epoch is accepted after a
// newer epoch of its sender: within an entry by the epoch check; across
// a forgotten entry because a sender's clock, and so its stamp times,
// grow across its restarts, so every stamp of the older epoch is older
// than the newer epoch's stamps the forgotten entry accepted, hence at or
// before the floor. testdata/antireplay.pml checks both with SPIN (a
// sender that restarts, an attacker that replays any datagram sent,
// reordering, a receiver that forgets).
//
// What it assumes, and what is left: a process restarted with its clock
// set back before its previous start is refused by receivers that still
// track its previous run, until they forget it or restart. A receiver
// that restarts remembers nothing: a datagram stamped within the skew
// before its start (plus how far the sender's clock runs ahead of the
// receiver's) may be accepted once more. A datagram the attacker held
// back and never let arrive is accepted once, late, if it is still within
// the window, as with IPsec. GETs and their replies are
// neither signed nor stamped: the hit path pays nothing.
//
// Cost: Accept takes one shard's mutex, looks its sender up in a map and
// allocates nothing once the sender is tracked; Stamp is one atomic add
// and a clock read (docs/benchmarks.md).
package antireplay
