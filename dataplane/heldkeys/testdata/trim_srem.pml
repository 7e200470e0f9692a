/*
 * trim_srem.pml: can a shim write take a key out of the set of keys a
 * cache may hold (SREM heldkeys.Key), so that direct writes of it work
 * again? For SPIN. The shims do as TRIM TRIM_SEPARATE TRIM_FAIL_UPDATE
 * (shim/write.go, applyWrite: SREM pipelined before the write under the
 * key's lock, phase 2 with StatusUnavailable), under a map that lets
 * clients write the shard directly; model_test.go runs that and
 * TRIM_KEEP_UPDATE. The model is trim_forget.pml's (directwrites.pml, plus
 * the directory's two facts, the node's pending write and parked readers,
 * and FlagHit = "an entry exists, valid or a placeholder") without
 * FORGET, with direct writers (NDIRECT, default 1). A direct writer whose
 * script answers nil writes through the shim.
 *
 * The candidate (TRIM): a shim write, under the key's lock, whose phase 1
 * invalidated every node that may hold the key and got no ack with
 * FlagHit (or skipped every node: none may hold it) runs SREM in the same
 * Redis step as its write and skips phase 2: no UPDATE. A write that saw
 * FlagHit runs as today (SADD, write, UPDATE). After the SREM, the script
 * Set writes the key directly again, until a FETCH, a tracked read or a
 * write that saw FlagHit adds it back.
 *
 * Variants (each with TRIM unless said):
 *   TRIM_SEPARATE     SREM as a step of its own, under the lock, before
 *                     the write (a pipeline, not one atomic step). Passes.
 *   TRIM_AFTER_WRITE  SREM after the write, under the lock. Passes.
 *   TRIM_AFTER_UNLOCK SREM after the unlock. Violated: a tracked read's
 *                     SADD, made after the write unlocked, is undone; a
 *                     direct write follows; the flight's readers that
 *                     joined after it take the tracked reply's older value.
 *   TRIM_EARLY        (alone) SREM when the lock is taken, before phase 1;
 *                     a write that then sees FlagHit adds the key back.
 *                     Violated the same way, before the INVALIDATE seals
 *                     the flight.
 *   TRIM_KEEP_UPDATE  phase 2 as today: an UPDATE with the written value.
 *                     Violated: a reader parked under the write after a
 *                     direct write is answered with the write's value; with
 *                     NOPARK, a FETCH after the direct write fills the entry
 *                     with C = the write's version (direct writes do not
 *                     move the clock) and the late UPDATE overwrites it.
 *   TRIM_FAIL_UPDATE  phase 2 sends an UPDATE with a failure status (as
 *                     phase2() does for a replayed write: StatusUnavailable):
 *                     it ends the node's pending write and sends its parked
 *                     readers to the shim, and gives no entry a value.
 *                     Passes.
 *   TRIM_ANY          (alone) trims whatever the acks said, FlagHit
 *                     ignored (and skips phase 2). Passes: FlagHit decides
 *                     which keys are worth trimming, not safety.
 *   HIT_VALID_ONLY    the node sets FlagHit only for a valid entry, not for
 *                     a placeholder waiting for its FETCH. Passes.
 * And from trim_forget.pml: NOPARK, SPLIT_READER, WITH_FLUSH, WITH_CLEAR,
 * FIX_FLUSH_ENTER, FIX_FLUSH_PENDING. WITH_FLUSH is violated with or
 * without TRIM (the current code's hole, trim_forget.pml); with the fixes
 * TRIM passes.
 *
 * Results (pan -O2 -DSAFETY -DCOLLAPSE; states stored):
 *   (none: today's protocol)      1,031,171   no error  1.0 s
 *   TRIM                          1,177,380   no error  1.1 s
 *   TRIM SPLIT_READER             3,760,792   no error  4.1 s
 *   TRIM MAXFLIGHT=2              2,415,761   no error  2.4 s
 *   TRIM MAXEVICT=2               1,480,023   no error  1.5 s
 *   TRIM MAXFETCH=3               1,605,566   no error  1.5 s
 *   TRIM NSHIM=2                 18,987,824   no error 27 s (1.0 GB)
 *   TRIM NDIRECT=2 MAXFETCH=1     8,731,008   no error 10 s
 *   TRIM NDIRECT=2                (over 1 GB exhaustive; -DBITSTATE -w31:
 *                                 25,053,409 states, no error, 22 s)
 *   TRIM TRIM_FAIL_UPDATE         1,645,720   no error  1.6 s
 *     SPLIT_READER                5,393,316   no error  5.8 s
 *     MAXFLIGHT=2                 3,529,783   no error  3.6 s
 *     NSHIM=2 MAXFETCH=1         14,542,163   no error 20 s
 *     NDIRECT=2 MAXFETCH=1       15,783,637   no error 21 s
 *   TRIM TRIM_SEPARATE            1,218,515   no error  1.1 s
 *   TRIM TRIM_AFTER_WRITE         1,204,232   no error  1.1 s
 *   TRIM_ANY                        433,004   no error  0.4 s
 *   TRIM HIT_VALID_ONLY             905,816   no error  0.9 s
 *   TRIM TRIM_KEEP_UPDATE         violated at depth 38
 *   TRIM TRIM_KEEP_UPDATE NOPARK  violated at depth 70
 *   TRIM TRIM_AFTER_UNLOCK        violated at depth 81
 *   TRIM_EARLY                    violated at depth 56
 *   WITH_FLUSH (with or without TRIM)  violated
 *   TRIM WITH_FLUSH FIX_FLUSH_ENTER           3,316,271   no error  3.9 s
 *   TRIM WITH_FLUSH WITH_CLEAR FIX_FLUSH_ENTER FIX_FLUSH_PENDING
 *                                12,441,311   no error 17 s
 *     with TRIM_FAIL_UPDATE      18,631,558   no error 27 s
 *
 * Bounds as in directwrites.pml.
 */

#ifndef NDIRECT
#define NDIRECT 1
#endif
#ifndef NSHIM
#define NSHIM 1
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
	indir = true
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
	bool inv;   /* phase 1 invalidated the node */
	bool hit;   /* its ack carried FlagHit */
	bool trim;  /* this write takes the key out of the set */

	if
	:: direct ->
		atomic { /* the script Set */
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

	atomic { !lk -> lk = true; sclock++; wv = sclock }
#ifdef TRIM_EARLY
	held = false;
#endif
	/* Phase 1 at the node: handleInvalidate. */
	atomic {
		inv = MAYHOLD;
		if
		:: inv ->
#ifdef HIT_VALID_ONLY
			hit = nent && nvalid;
#else
			hit = nent;
#endif
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
	if
	:: inv -> dirAdd()
	:: else -> skip
	fi;
#endif
	/* The acks are in (invalidate returned). */
#if defined(TRIM) || defined(TRIM_ANY) || defined(TRIM_EARLY)
#ifdef TRIM_ANY
	trim = true;
#else
	trim = !inv || !hit;
#endif
#endif
	if
	:: !trim ->
		if
		:: inv -> held = true /* SADD before the write: phase 2 gives a value */
		:: else -> skip
		fi;
		atomic { redisWrite(mine) }
	:: trim ->
#if defined(TRIM_SEPARATE)
		held = false;
		atomic { redisWrite(mine) }
#elif defined(TRIM_AFTER_WRITE)
		atomic { redisWrite(mine) }
		held = false
#elif defined(TRIM_AFTER_UNLOCK) || defined(TRIM_EARLY)
		atomic { redisWrite(mine) }
#else
		atomic { held = false; redisWrite(mine) } /* SREM and SET, one step */
#endif
	fi;
	acked(mine); /* the reply is sent before the unlock */
	lk = false;
#ifdef TRIM_AFTER_UNLOCK
	if
	:: trim -> held = false
	:: else -> skip
	fi;
#endif
	/* Phase 2 */
	if
	:: inv && !trim ->
		if
		:: atomic { nodeUpdate(wv, mine, true) }
		:: skip /* lost */
		fi
	:: inv && trim ->
		if
#if defined(TRIM_KEEP_UPDATE)
		:: atomic { nodeUpdate(wv, mine, true) }
#elif defined(TRIM_FAIL_UPDATE)
		:: atomic { nodeUpdate(wv, mine, false) }
#endif
		:: skip /* no UPDATE, or lost */
		fi
	:: else -> skip
	fi;
done:
	mine = 0;
	wv = 0;
	inv = false;
	hit = false;
	trim = false
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
