/*
 * trim_forget.pml: directwrites.pml with the rule of commit 0649cb1
 * (reverted by 753afbd) and the node's pending writes and parked readers,
 * for SPIN. Run it as model_test.go runs directwrites.pml (spin -a;
 * gcc -O2 -DSAFETY; ./pan); -DCOLLAPSE on gcc's line halves the memory.
 *
 * The rule (FORGET): a write's phase 1 that gets an INVALIDATE_ACK
 * without FlagHit drops the node from the key's directory entry
 * (holders.forget in phaseOne.finish), unless the entry was made after
 * the write began (holder.since > the directory's clock when phase 1
 * started). Later writes then skip the node (mayHold false).
 *
 * What this model adds to directwrites.pml, from package cachenode:
 *
 * - The directory is two facts, as in holders.go: flushed (the node
 *   acknowledged a FLUSH this epoch) and indir (byKey lists the node for
 *   the key), with the directory's clock dclock and the entry's since
 *   (holders.add: clock++, since = clock, under holders.mu). A write
 *   invalidates the node iff !flushed || indir (mayHold).
 * - FlagHit on the ack is "an entry exists, valid or a placeholder"
 *   (store.invalidate's result, handleInvalidate). An open flight of
 *   reads, a pending write or parked readers do not set it.
 * - The pending write (pending.go): INVALIDATE(v) records v (the largest
 *   seen) and seals the flight (beginWrite); UPDATE(v) ends it iff its
 *   version is <= v (endWrite). A miss while a write is pending parks
 *   (miss, park.go) under the pending write's version instead of joining
 *   or starting a shared flight; UPDATE(v) answers the readers parked
 *   under a version <= v with the UPDATE's value (unpark, answerParked),
 *   whatever the entry; ParkTimeout sends them to the shim in a read that
 *   starts after they all arrived (safe; modelled as dropping them). A
 *   shared flight starts only while no write is pending (miss: joinable).
 * - One parked reader is watched (pk, pkver, pkfloor): the Reader may park
 *   whenever the code would; exploring every choice of which reader to
 *   watch covers every parked reader.
 * - A read takes its floor in the step that reads (see Reader).
 *
 * Macros:
 *   FORGET          the rule of 0649cb1. Violated: a write W1 finds no
 *                   entry at the node (it evicted it, or only had a flight
 *                   of reads) and forgets it, but its INVALIDATE left W1
 *                   pending there; W2 skips the node and is acknowledged;
 *                   a reader then parks under W1, and W1's late UPDATE
 *                   answers it with W1's value.
 *   FIX_FORGET_NOVALUE  with FORGET: a write sends a node it forgot no
 *                   value in phase 2, only an UPDATE with a failure status
 *                   (ends the pending write, sends parked readers to the
 *                   shim, leaves the entry alone). No error.
 *   NOPARK          the node never parks (ParkTimeout < 0): readers that
 *                   arrive while a write is pending read Redis. FORGET
 *                   with NOPARK: no error.
 *   WITH_FLUSH      the shim has just started: the node is not flushed,
 *                   and may be flushed once: FLUSH drops the entry and
 *                   seals the flight (handleFlush), and its ack, later,
 *                   marks the node flushed. Without FORGET this is the
 *                   current code's way to skip a node, and it is violated
 *                   the same way: a write whose INVALIDATE reached the
 *                   node before the ack was recorded leaves its pending
 *                   write (or, with NOPARK, an UPDATE that fills a
 *                   placeholder whose FETCH the shim has not served yet),
 *                   and the next write skips the node.
 *   WITH_CLEAR      with WITH_FLUSH: the directory may be cleared once
 *                   (it was full): byKey and flushed cleared, a new epoch.
 *   FIX_FLUSH_PENDING   FLUSH also ends the node's pending writes and sends
 *                   their parked readers to the shim. Alone: violated (a
 *                   write whose INVALIDATE reaches the node after the
 *                   FLUSH, before the shim records the FLUSH's ack).
 *   FIX_FLUSH_ENTER a write enters every node its phase 1 invalidated in
 *                   the key's directory when the ack arrives (holders.add
 *                   in phaseOne.finish). Alone, with WITH_FLUSH: no error;
 *                   with WITH_CLEAR: violated (a write before the clear
 *                   left its pending write; the clear drops the entry).
 *                   Both fixes, with WITH_CLEAR: no error.
 *
 * Results (pan -O2 -DSAFETY -DCOLLAPSE, default bounds; states stored):
 *   (none)                          786,333   no error  0.8 s
 *   SPLIT_READER                  2,659,879   no error  3.2 s
 *   FORGET                        violated at depth 56 (2,106,092 states)
 *   FORGET, SPLIT_READER          violated at depth 66
 *   FORGET, -DBFS                 shortest trail, depth 48 (380,402 states)
 *   FORGET NOPARK                   884,282   no error  0.9 s
 *   FORGET FIX_FORGET_NOVALUE     3,207,197   no error  3.9 s
 *     the same, SPLIT_READER     11,112,001   no error 15 s
 *   WITH_FLUSH                    violated (249,073 states)
 *   WITH_FLUSH NOPARK             violated: a stale valid copy
 *   WITH_FLUSH FIX_FLUSH_PENDING  violated
 *   WITH_FLUSH FIX_FLUSH_ENTER    2,088,170   no error  2.7 s
 *     the same, SPLIT_READER      6,984,098   no error 10 s
 *   WITH_FLUSH WITH_CLEAR FIX_FLUSH_ENTER  violated
 *   WITH_FLUSH WITH_CLEAR FIX_FLUSH_ENTER FIX_FLUSH_PENDING
 *                                 9,487,975   no error 14 s
 *
 * Bounds as in directwrites.pml, but NSHIM 2 and NDIRECT 0 (the key is
 * never trimmed here, so a direct write of it fails once it is held).
 */

#ifndef NDIRECT
#define NDIRECT 0
#endif
#ifndef NSHIM
#define NSHIM 2
#endif
#ifndef MAXFETCH
#define MAXFETCH 2
#endif
#ifndef MAXEVICT
#define MAXEVICT 1
#endif
#ifndef MAXFLIGHT
#define MAXFLIGHT 1
#endif

/* Redis */
byte v = 0;
byte gver = 0;
bool held = false;

/* The property */
byte ackedVer = 0;
byte jfloor = 0;

/* The shim */
bool lk = false;
byte sclock = 1;
bool flushed = true;  /* the node acknowledged a FLUSH of this epoch */
bool indir = false;   /* the directory lists the node for the key */
byte dclock = 0;      /* the directory's clock (0649cb1's holders.clock) */
byte hsince = 0;      /* the node's entry's since */
#define MAYHOLD (!flushed || indir)

/* The node's entry */
bool nent = false;
bool nvalid = false;
byte nver = 0;
byte ncopy = 0;
byte ngen = 0;
bool nfilled = false;
bool fetching = false;

/* The node's pending write (0: none) and the watched parked reader. */
byte npend = 0;
bool pk = false;
byte pkver = 0;
byte pkfloor = 0;

/* FLUSH */
bool flushAck = false;  /* the node served a FLUSH; its ack is on the way */
bool flushDone = false;

mtype = { NOFLIGHT, OPEN, SEALED };
mtype fl = NOFLIGHT;

chan fetchReq = [1] of { byte };
chan fetchRep = [1] of { byte, byte, byte };
chan getReq = [1] of { bit };
chan getRep = [1] of { byte, bool };

inline acked(x) {
	atomic {
		if
		:: x > ackedVer -> ackedVer = x
		:: else -> skip
		fi
	}
}

inline redisWrite(x) {
	gver++;
	v = gver;
	x = gver
}

/* holders.add */
inline dirAdd() {
	atomic { dclock++; hsince = dclock; indir = true }
}

/* The node serves UPDATE(wv) carrying value val (withValue) or a failure
 * status (!withValue). */
inline nodeUpdate(wv, val, withValue) {
	if
	:: npend != 0 && npend <= wv -> npend = 0
	:: else -> skip
	fi;
	if
	:: pk && pkver <= wv ->
		if
		:: withValue -> assert(val >= pkfloor)
		:: else -> skip /* forwarded: a read that starts now */
		fi;
		pk = false; pkver = 0; pkfloor = 0
	:: else -> skip
	fi;
	if
	:: withValue && nent && nver == wv -> nvalid = true; ncopy = val
	:: else -> skip
	fi
}

proctype Writer(bool direct) {
	byte mine = 0;
	byte wv;
	byte before;  /* the directory's clock as phase 1 began */
	bool inv;     /* phase 1 invalidated the node */
	bool hit;     /* its ack carried FlagHit */
	bool forgot;  /* this write dropped the node from the directory */

	if
	:: direct ->
		atomic {
			if
			:: !held -> redisWrite(mine)
			:: else -> skip
			fi
		}
		if
		:: mine > 0 -> acked(mine); goto done
		:: else -> skip
		fi
	:: else -> skip
	fi;

	atomic { !lk -> lk = true; sclock++; wv = sclock; before = dclock }
	/* Phase 1 at the node: handleInvalidate. */
	atomic {
		inv = MAYHOLD;
		if
		:: inv ->
			hit = nent;
			if
			:: nent ->
				nvalid = false;
				ncopy = 0;
				if
				:: wv > nver -> nver = wv
				:: else -> skip
				fi
			:: else -> skip
			fi;
			if /* beginWrite: the pending write, the flight sealed */
			:: wv > npend -> npend = wv
			:: else -> skip
			fi;
			if
			:: fl == OPEN -> fl = SEALED
			:: else -> skip
			fi
		:: else -> skip
		fi
	}
#ifdef FIX_FLUSH_ENTER
	/* The ack of a node this write invalidated enters it in the key's
	 * directory (holders.add in phaseOne.finish), so that no later write
	 * skips a node that this write's UPDATE may still reach. */
	if
	:: inv -> dirAdd()
	:: else -> skip
	fi;
#endif
	/* The ack reaches the shim: phaseOne.finish. */
#ifdef FORGET
	atomic {
		if
		:: inv && !hit && indir && hsince <= before -> indir = false; forgot = true
		:: else -> skip
		fi
	}
#endif
	if
	:: inv -> held = true
	:: else -> skip
	fi;
	atomic { redisWrite(mine) }
	acked(mine);
	lk = false;
	/* Phase 2 */
	if
	:: inv ->
		if
#ifdef FIX_FORGET_NOVALUE
		:: atomic { forgot -> nodeUpdate(wv, mine, false) }
		:: atomic { !forgot -> nodeUpdate(wv, mine, true) }
#else
		:: atomic { nodeUpdate(wv, mine, true) }
#endif
		:: skip /* lost */
		fi
	:: else -> skip
	fi;
done:
	mine = 0;
	wv = 0;
	before = 0;
	inv = false;
	hit = false;
	forgot = false
}

/* serveFetch */
active proctype ShimFetch() {
	byte id, c, val;
end:
	do
	:: fetchReq?id ->
		atomic { !lk -> lk = true; dirAdd() }
		held = true;
		atomic { c = sclock; val = v }
		atomic { lk = false; fetchRep!id, c, val; id = 0; c = 0; val = 0 }
	od
}

/* serveGets: tracking (holders.add, then the lock check, then SADD if
 * tracked), then GET. */
active proctype ShimGet() {
	bool trk;
	byte val;
end:
	do
	:: getReq?_ ->
		dirAdd();
		trk = !lk;
		if
		:: trk -> held = true
		:: else -> skip
		fi;
		val = v;
		atomic { getRep!val, trk; trk = false; val = 0 }
	od
}

#ifdef WITH_FLUSH
/* The flusher: a FLUSH's ack marks the node flushed (markFlushed). With
 * WITH_CLEAR the directory may also be cleared once (holders.add when it
 * is full: byKey and flushed cleared, a new epoch, acks of older FLUSHes
 * ignored, the node flushed again). */
active proctype Flusher() {
	byte clears = 0;
end:
	do
	:: atomic { flushAck -> flushed = true; flushAck = false }
#ifdef WITH_CLEAR
	:: atomic { clears < 1 -> clears++; indir = false; flushed = false; flushAck = false; flushDone = false }
#endif
	od
}
#endif

active proctype Node() {
	byte id, c, val;
	bool trk;
	byte fetches = 0, evicts = 0, flights = 0;
end:
	do
	:: atomic {
		!fetching && fetches < MAXFETCH && !(nent && nvalid) ->
		if
		:: !nent -> nent = true; nvalid = false; nver = 0; nfilled = false; ngen++
		:: else -> skip
		fi;
		fetching = true;
		fetches++;
		fetchReq!ngen
	}
	:: atomic {
		fetchRep?id, c, val ->
		fetching = false;
		if
		:: nent && ngen == id && !nvalid && c >= nver ->
			nvalid = true; nver = c; ncopy = val; nfilled = true
		:: else -> skip
		fi;
		id = 0; c = 0; val = 0
	}
	:: atomic {
		nent && evicts < MAXEVICT ->
		nent = false; nvalid = false; nver = 0; ncopy = 0; nfilled = false; evicts++
	}
	/* A shared flight starts only while no write is pending (joinable). */
	:: atomic {
		fl == NOFLIGHT && flights < MAXFLIGHT && npend == 0 ->
		fl = OPEN; flights++; getReq!0
	}
	:: atomic {
		getRep?val, trk ->
		if
		:: trk -> assert(val >= jfloor)
		:: else -> skip
		fi;
		fl = NOFLIGHT; jfloor = 0; val = 0; trk = false
	}
	/* ParkTimeout: the parked readers go to the shim, in a read that
	 * starts after they all arrived. */
	:: atomic { pk -> pk = false; pkver = 0; pkfloor = 0 }
#ifdef WITH_FLUSH
	/* FLUSH (handleFlush): flights sealed, entries dropped; acknowledged. */
	:: atomic {
		!flushed && !flushDone ->
		if
		:: fl == OPEN -> fl = SEALED
		:: else -> skip
		fi;
		nent = false; nvalid = false; nver = 0; ncopy = 0; nfilled = false;
#ifdef FIX_FLUSH_PENDING
		npend = 0;
		pk = false; pkver = 0; pkfloor = 0;
#endif
		flushDone = true;
		flushAck = true
	}
#endif
	od
}

/* Readers. A read starts, takes ackedVer as its floor, and later reads.
 * By default (no SPLIT_READER) a read starts in the step that reads: the
 * floor can only grow meanwhile, so a read that started earlier and fails
 * its assertion fails it too when it starts at the read; the search finds
 * the same violations with fewer states. SPLIT_READER is
 * directwrites.pml's reader. */
active proctype Reader() {
#ifdef SPLIT_READER
	byte floor;
end:
	do
	:: floor = ackedVer;
		if
		:: atomic { nent && nvalid -> assert(ncopy >= floor) }
		:: atomic { fl == OPEN -> if :: floor > jfloor -> jfloor = floor :: else -> skip fi }
#ifndef NOPARK
		/* miss while a write is pending: park under its version */
		:: atomic { !(nent && nvalid) && npend != 0 && !pk -> pk = true; pkver = npend; pkfloor = floor }
#endif
		:: atomic { assert(v >= floor) }
		fi;
		floor = 0
	od
#else
end:
	do
	:: atomic { nent && nvalid -> assert(ncopy >= ackedVer) }
	:: atomic { fl == OPEN && ackedVer > jfloor -> jfloor = ackedVer }
#ifndef NOPARK
	/* miss while a write is pending: park under its version */
	:: atomic { !(nent && nvalid) && npend != 0 && !pk -> pk = true; pkver = npend; pkfloor = ackedVer }
#endif
	/* a read of Redis, directly or through the shim, returns v >= ackedVer */
	od
#endif
}

init {
	byte i;
	atomic {
#ifdef WITH_FLUSH
		flushed = false; /* a shim that starts: no node flushed yet */
#else
		if
		:: flushed = false
		:: skip
		fi;
#endif
		i = 0;
		do
		:: i < NDIRECT -> run Writer(true); i++
		:: else -> break
		od;
		i = 0;
		do
		:: i < NSHIM -> run Writer(false); i++
		:: else -> break
		od;
		i = 0
	}
}
