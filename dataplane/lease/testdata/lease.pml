/*
 * A model of serving leases granted by the shims, for the SPIN model
 * checker. model_test.go runs it; docs/dataplane.md (Leases) gives the
 * argument it checks.
 *
 * One key, one shim, one cache node, one Redis and a writer. Time is a
 * tick counter, now, that a clock process advances up to MAXT: real time
 * and the shim's clock. The node has a clock of its own, nclock, which
 * may fall up to DRIFT ticks behind (the bound on clock rates over a
 * lease, stated in the argument); a node clock that runs ahead is only
 * safer. A process that takes no step while the clock runs is paused,
 * stopped or starved; SPIN explores every such schedule. A message may be
 * lost (send) or stay in flight for any time, and each kind travels on
 * its own channel, so messages of different kinds overtake each other.
 *
 * Values are versions in write order: every write takes the next number.
 *
 * The node serves a valid entry only while nclock < until, its lease from
 * the shim. It asks for a lease with RENEW(t), t its clock when it sends
 * it, and a GRANT(e, t, m) extends until to t + L. Grants carry the
 * shim's epoch for the node, e, and the shim's map version, m. The node
 * applies a grant only if its own map version is at least m; it ignores
 * the others. A grant of another epoch than the node's makes the
 * node drop its entries first (a flush), then take the epoch and the
 * lease t + L; a grant of an older epoch than the node's changes
 * nothing. Grants may arrive in any order. UPDATEs and FILLs carry the
 * epoch the shim had for the node when it sent them, and the node applies
 * them only in that epoch, or before its first grant (whose flush drops
 * what they filled): a value the shim sent before it released the node
 * never reaches an entry the node keeps after the flush.
 *
 * The shim records granted, the latest until it may have given the node:
 * now + L + DRIFT when it sends a grant. A write takes the key's lock and
 * the next version, and, if the directory says the node may hold an
 * entry, sends INVALIDATE(v) and waits for its ack, or for now >=
 * granted. If it proceeds without the ack (it releases the node), it
 * moves the node to a new epoch in the same step, so no grant it sends
 * from then on lets the node serve an entry it held before. Then it
 * writes Redis, acknowledges the writer, unlocks, and sends UPDATE(v).
 *
 * The node follows the coherence rules of package cachenode: INVALIDATE(v)
 * makes the entry invalid with version max(version, v); UPDATE(v) makes
 * an invalid entry of version v valid; a FILL applies to the placeholder
 * of the same FETCH (tag) if it is still invalid and its value is not
 * older than the entry's version. A FETCH is served under the key's lock,
 * enters the node in the directory and reads Redis. The node may evict
 * its entry at any time.
 *
 * The map: the shim and the node start with map 1, in which the node
 * owns the key. With MAPCHANGE the shim may install map 2, which moves
 * the key away from the node, at a time T (Clock, below). From then on
 * its grants carry version 2 and it refuses the node's FETCHes. Until
 * T + L + LAG + DRIFT, the release by map, a write invalidates the node
 * and waits for it as above. From then on it neither invalidates the
 * node nor waits for it, and moves it to no new epoch. The node may
 * install map 2 at any time after T, or never: it then drops its entry
 * and takes no further part. Until then its map is 1, so it ignores
 * every grant the shim sent after T, and its lease ends by T + L + DRIFT
 * in real time.
 *
 * The property: a read that starts after a write was acknowledged
 * returns that write's value or a newer one (Monitor, below).
 *
 * Macros (spin -D):
 *   NEGOTIATE: the rolling upgrade's handshake. A node starts serving
 *     under the map's lease, which this model takes as always held (the
 *     map's fencing is argued apart): it serves a valid entry at any time.
 *     It serves under the shim's lease from the moment it sends its first
 *     RENEW, and the shim releases it by lease only once it received a
 *     RENEW from it (capable); before, a write waits for the ack.
 *   BUG_SWITCH_ON_GRANT: with NEGOTIATE, the node switches to the shim's
 *     lease only when a grant arrives. A grant lost after the shim
 *     counted the node capable lets the shim release a node that still
 *     serves under the map's lease: the search must find it.
 *   BUG_EARLY: the shim releases the node without waiting for granted
 *     (as if its invalidate timeout were all it waited). The search must
 *     find a stale read: the assertion can fail.
 *   BUG_NO_MARGIN: granted leaves out the drift (now + L). A node clock
 *     that fell behind serves after the shim released it: the search
 *     must find it.
 *   BUG_NO_EPOCH: no epochs. A RENEW sent before the release and granted
 *     after it extends a lease over a stale entry: the search must find
 *     it.
 *   MAPCHANGE: the shim installs a map that moves the key away from the
 *     node (above). Not meant with NEGOTIATE.
 *   LAG: the map delivery lag the release by map waits for (default 0).
 *     The node may install the map at any time after the shim, which
 *     covers any lag, so LAG only makes the shim wait longer; 0 is the
 *     hardest case.
 *   BUG_NO_MAPVERSION: with MAPCHANGE, the node applies grants whatever
 *     their map version. A grant sent after T extends the node's lease
 *     past the release by map, which moves it to no new epoch: the search
 *     must find a stale read.
 *   BUG_MAP_RELEASE_EARLY: with MAPCHANGE, the release by map leaves out
 *     the margin (T + L + LAG). A grant sent just before T, to a node
 *     whose clock then falls behind, outlasts it when LAG < DRIFT: the
 *     search must find it.
 */

#ifndef L
#define L 2
#endif
#ifndef MAXT
#define MAXT 5
#endif
#ifndef DRIFT
#define DRIFT 1
#endif
#ifdef NEGOTIATE
#define RELEASABLE capable
#else
#define RELEASABLE true
#endif
#ifdef BUG_NO_MARGIN
#define MARGIN 0
#else
#define MARGIN DRIFT
#endif
#ifndef MAXWRITES
#define MAXWRITES 2
#endif
#ifndef MAXRENEW
#define MAXRENEW 3
#endif
#ifndef MAXFETCH
#define MAXFETCH 2
#endif

#ifdef BUG_NO_EPOCH
#define EPOCH 1
#else
#define EPOCH sepoch
#endif

#if defined(MAPCHANGE) && defined(NEGOTIATE)
#error "MAPCHANGE is not meant with NEGOTIATE"
#endif
#ifndef LAG
#define LAG 0
#endif
#ifdef BUG_MAP_RELEASE_EARLY
#define MAPMARGIN 0
#else
#define MAPMARGIN DRIFT
#endif
/* The shim has installed map 2 and released the node by map. */
#define MAPRELEASED (smap == 2 && now >= moved + L + LAG + MAPMARGIN)
/* The node may apply a grant sent under map version m. */
#ifdef BUG_NO_MAPVERSION
#define USABLE(m) true
#else
#define USABLE(m) (m <= nmap)
#endif

byte now;		/* the clock: real time, and the shim's clock */
byte nclock;		/* the node's clock, at most DRIFT behind */
byte lag;		/* how far behind now it is */
byte redis;		/* Redis's value: the version of the last write */
byte acked;		/* the newest acknowledged write */
bool locked;		/* the key's lock at the shim */

/* the shim's view of the node */
byte granted;		/* the latest until it may have granted */
byte sepoch = 1;	/* the node's epoch at the shim */
bool holder;		/* the directory: the node may hold an entry */
bool capable;		/* the node asked for a lease: releases may follow leases */
byte smap = 1;		/* the shim's map version: 2 once it moved the key away */
byte moved;		/* when the shim installed map 2: T */

/* the node */
byte until;		/* its lease from the shim */
byte nepoch;		/* the epoch of its lease (0: none yet) */
bool valid;		/* its entry is valid */
byte ver;		/* the entry's version (its value when valid) */
byte tag;		/* the FETCH its placeholder waits for (0: none) */
byte nmap = 1;		/* its map version */
#ifdef NEGOTIATE
bool leasemode;		/* the node serves under the shim's lease, not the map's */
#else
#define leasemode true
#endif

chan inv = [1] of { byte };		/* INVALIDATE(v) */
chan invack = [1] of { byte };		/* INVALIDATE_ACK(v) */
chan upd = [1] of { byte, byte };	/* UPDATE(epoch, v) */
chan renew = [1] of { byte };		/* RENEW(t) */
chan grant = [2] of { byte, byte, byte };	/* GRANT(epoch, t, map), in any order */
chan fetch = [1] of { byte };		/* FETCH(tag) */
chan fill = [1] of { byte, byte, byte };	/* FILL(epoch, tag, value) */

/* The clock. Each tick, the node's clock either keeps up or falls one
 * more tick behind, up to DRIFT.
 *
 * With MAPCHANGE, the shim may install map 2 as a tick T ends, after
 * all else at T: its grants at T still carry map 1, the latest grants
 * the node may take, which is the hardest case. A change in the middle of T only
 * turns some of T's grants and FETCHes into ones the node ignores or
 * the shim refuses, as if lost. The change happens only while the
 * release by map still falls within the run: a later one would only
 * lose grants and FETCHes and stop the node, which the runs without it
 * cover. */
active proctype Clock() {
	do
	:: atomic {
		now < MAXT ->
#ifdef MAPCHANGE
		if
		:: smap == 1 && now + L + LAG + MAPMARGIN <= MAXT -> smap = 2; moved = now
		:: true
		fi;
#endif
		now++;
		if
		:: lag < DRIFT -> lag++
		:: true -> nclock++
		fi
	   }
	:: now == MAXT -> break
	od
}

/* The network may lose any message: send(c, m) sends it or not (a
 * message sent to a full channel is lost too). */
#define send(c, m)	if :: nfull(c) -> c ! m :: skip fi
#define send2(c, a, b)	if :: nfull(c) -> c ! a, b :: skip fi
#define send3(c, a, b, d)	if :: nfull(c) -> c ! a, b, d :: skip fi

active proctype Writer() {
	byte v, n = 0;
	do
	:: n < MAXWRITES ->
		atomic {
			locked = true; v = redis + 1;
			if
			:: holder && !MAPRELEASED -> send(inv, v)
			:: else -> goto write /* no entry, or released by map */
			fi
		};
		do
		:: atomic { invack ? eval(v) -> break }
		:: atomic { invack ? [_] && !invack ? [eval(v)] -> invack ? _ } /* an older write's ack */
#ifdef BUG_EARLY
		:: atomic { sepoch++; break } /* at once: an invalidate timeout shorter than the lease */
#else
		:: atomic { now >= granted && RELEASABLE -> sepoch++; break }
#endif
		:: atomic { MAPRELEASED -> break } /* by map: no new epoch */
		:: now == MAXT -> goto done
		od;
write:		atomic { redis = v; acked = v; locked = false; send2(upd, EPOCH, v); n++; v = 0 }
	:: else -> break
	od;
done:	locked = false /* the run ends: a write cut short is never acknowledged */
}

/* The shim's side of leases, fills and the map. Grants carry its map
 * version. It serves a FETCH only while the node owns the key in its
 * map; it drops the others. */
active proctype Shim() {
	byte t, g;
	do
	:: atomic {
		renew ? t ->
		capable = true;
		if
		:: now + L + MARGIN > granted -> granted = now + L + MARGIN
		:: else
		fi;
		send3(grant, EPOCH, t, smap);
		t = 0
	   }
	:: atomic {
		!locked && fetch ? [g] -> fetch ? g;
		if
		:: smap == 1 -> holder = true; send3(fill, EPOCH, g, redis)
		:: else
		fi;
		g = 0
	   }
	:: now == MAXT -> break
	od
}

/* A flush: the node drops its entry and placeholder. */
inline flush() {
	valid = false; ver = 0; tag = 0
}

/* Locals are zeroed after each step, so that SPIN does not tell apart
 * states that differ only in a value already used. */
active proctype Node() {
	byte v, e, t, g, m, renews = 0, fetches = 0;
	do
	:: atomic {
		inv ? v ->
		if
		:: ver < v -> ver = v
		:: else
		fi;
		valid = false;
		send(invack, v);
		v = 0
	   }
	:: atomic {
		upd ? e, v ->
		if
		:: (nepoch == 0 || e == nepoch) && !valid && ver == v -> valid = true; tag = 0
		:: else
		fi;
		e = 0; v = 0
	   }
	:: atomic {
		nempty(grant) ->
		if	/* any grant in flight, whatever its place */
		:: grant ?? eval(1), t, m -> e = 1
		:: grant ?? eval(2), t, m -> e = 2
		:: grant ?? eval(3), t, m -> e = 3
		fi;
		if	/* ignored if sent under a newer map than the node's */
		:: USABLE(m) && e > nepoch -> flush(); nepoch = e; until = t + L;
#ifdef BUG_SWITCH_ON_GRANT
			leasemode = true
#else
			skip
#endif
		:: USABLE(m) && e == nepoch && t + L > until -> until = t + L
		:: else	/* a newer map's grant, an older epoch's, or no longer */
		fi;
		e = 0; t = 0; m = 0
	   }
	:: atomic {
		fill ? e, g, v ->
		if
		:: (nepoch == 0 || e == nepoch) && g != 0 && g == tag && !valid && v >= ver -> valid = true; ver = v; tag = 0
		:: else
		fi;
		e = 0; g = 0; v = 0
	   }
#if defined(NEGOTIATE) && !defined(BUG_SWITCH_ON_GRANT)
	:: atomic { renews < MAXRENEW -> leasemode = true; send(renew, nclock); renews++ }
#else
	:: atomic { renews < MAXRENEW -> send(renew, nclock); renews++ }
#endif
	:: atomic { fetches < MAXFETCH && tag == 0 && !valid -> fetches++; tag = fetches; send(fetch, tag) }
	:: atomic { valid -> flush() } /* an eviction */
#ifdef MAPCHANGE
	/* The node installs map 2: it no longer owns the key, drops its
	 * entry and stops. It would serve, fill and fetch the key no more;
	 * its acknowledgements would only let writes go on sooner. */
	:: atomic { smap == 2 -> flush(); nmap = 2; break }
#endif
	:: now == MAXT -> break
	od
}

/*
 * The property, as an invariant: whenever the node could answer a read
 * from its entry, the entry is not older than the newest acknowledged
 * write. A read that starts after a write was acknowledged and is
 * answered from the entry therefore returns that write's value or a newer
 * one. SPIN checks the assertion in every reachable state.
 */
active proctype Monitor() {
	assert(!(valid && (!leasemode || nclock < until)) || ver >= acked)
}
