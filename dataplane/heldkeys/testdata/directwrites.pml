/*
 * A model of the safety argument of package heldkeys (direct writes), for
 * the SPIN model checker. model_test.go runs it.
 *
 * One key, one cache node, one shim, one Redis. Values are versions in
 * Redis order: every write of Redis takes the next number, so a value is
 * older than another iff its number is smaller. Every Redis command is one
 * atomic step.
 *
 * Redis holds the value v and held, whether the key is in the set Key.
 * A direct write is the script Set: if held it answers nil, and the writer
 * sends the write to the shim; otherwise it writes v and is acknowledged.
 *
 * The shim has the key's lock, its version clock (versionClock) and its
 * directory of copies (holders.go): whether the node may hold an entry.
 * The node starts either flushed and out of the directory, or not flushed
 * yet, which the shim treats as "may hold an entry" for every key.
 * A shim write (serveWrite, applyWrite) takes the lock and a version,
 * invalidates the node if it may hold an entry and waits for the ack
 * (phase 1), adds the key to the set if it did (its UPDATE may give the
 * node a value), writes Redis, replies, unlocks, and then sends phase 2,
 * an UPDATE with the value it wrote. The UPDATE may arrive late or never.
 * A FETCH (serveFetch) takes the lock, enters the node in the directory,
 * adds the key to the set (SADD), then reads the clock and the value (GET,
 * after the SADD on the same connection), unlocks and replies. A node's
 * GET (serveGets, tracking) enters the node in the directory, is tracked
 * if no write holds the lock, adds the key to the set if tracked
 * (markHeld), then reads the value.
 *
 * The node follows the coherence rules of package cachenode: an entry has
 * a version; an INVALIDATE makes it invalid with version max(version, v)
 * and seals the node's flight of reads; an UPDATE of version v applies iff
 * the entry has version v (store.update); a fill applies iff it is still
 * the same entry, still invalid, and C >= its version, and sets the
 * version to C (store.fill). The node may add a placeholder and FETCH,
 * refresh an invalid entry, evict its entry, or send a GET for a flight
 * of reads that readers join until the flight is sealed. Readers joined
 * to a flight take its value only if the reply is tracked.
 *
 * The property: a read that starts after a write was acknowledged returns
 * that write's value or a newer one. ackedVer is the newest acknowledged
 * write. A read takes it as its floor when it starts, and asserts that the
 * value it returns is not below the floor. A read returns the node's copy
 * if valid, joins the node's open flight, or reads Redis.
 *
 * Macros (spin -D):
 *   BUG_NO_MARK leaves out the SADD before the shim's reads. The model
 *     must then fail: this shows that the assertion can fail.
 *   BUG_NO_WRITE_MARK leaves out the SADD of a shim write that
 *     invalidated the node. The model then fails too: a late UPDATE gives
 *     the node a value older than a direct write that found the key
 *     outside the set.
 *   FIX_UPDATE_FILLED: the node applies an UPDATE only to an invalid entry
 *     that a fill made valid once (not to a placeholder, not to a valid
 *     entry). Another way to close the same hole, with BUG_NO_WRITE_MARK;
 *     not what the code does.
 *
 * Bounds keep the state space small: NDIRECT writers that try a direct
 * write first, NSHIM writers that only use the shim (a DEL, an RMW, a
 * client without direct writes), and at most MAXFETCH fetches, MAXEVICT
 * evictions and MAXFLIGHT flights.
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
byte v = 0;        /* the key's value: the version of the write that wrote it */
byte gver = 0;     /* writes of Redis so far: the versions in Redis order */
bool held = false; /* the key is in the set Key */

/* The property */
byte ackedVer = 0; /* the newest acknowledged write */
byte jfloor = 0;   /* the highest floor of the readers joined to the flight */

/* The shim */
bool lk = false;     /* the key's lock */
byte sclock = 1;     /* versionClock: the last version handed out */
bool holder = false; /* the directory: the node may hold an entry */

/* The node's entry */
bool nent = false;     /* an entry exists, a placeholder included */
bool nvalid = false;   /* it is valid */
byte nver = 0;         /* its version (the shim's clock) */
byte ncopy = 0;        /* its value, when valid */
byte ngen = 0;         /* its identity: a new one per placeholder */
bool nfilled = false;  /* a fill made it valid once */
bool fetching = false; /* a FETCH for it is in flight */

/* The node's flight of reads */
mtype = { NOFLIGHT, OPEN, SEALED };
mtype fl = NOFLIGHT;

chan fetchReq = [1] of { byte };             /* entry identity */
chan fetchRep = [1] of { byte, byte, byte }; /* identity, C, value */
chan getReq = [1] of { bit };
chan getRep = [1] of { byte, bool };         /* value, tracked */

inline acked(x) {
	atomic {
		if
		:: x > ackedVer -> ackedVer = x
		:: else -> skip
		fi
	}
}

/* A Redis write: the next version in Redis order. */
inline redisWrite(x) {
	gver++;
	v = gver;
	x = gver
}

/* SADD of the key to the set, before the shim reads it for a cache. */
inline markHeld() {
#ifdef BUG_NO_MARK
	skip
#else
	held = true
#endif
}

/* A writer: a direct write first if direct; the shim's two-phase write if
 * not, or if the key is held. */
proctype Writer(bool direct) {
	byte mine = 0; /* the version this write wrote in Redis */
	byte wv;       /* the shim's version of the write */
	bool inv;      /* phase 1 invalidated the node */

	if
	:: direct ->
		atomic { /* the script Set */
			if
			:: !held -> redisWrite(mine)
			:: else -> skip /* nil: a cache may hold the key */
			fi
		}
		if
		:: mine > 0 -> acked(mine); goto done
		:: else -> skip
		fi
	:: else -> skip
	fi;

	/* The shim's write: the lock and a version. */
	atomic { !lk -> lk = true; sclock++; wv = sclock }
	/* Phase 1, if the node may hold an entry: INVALIDATE, acknowledged. */
	atomic {
		inv = holder;
		if
		:: inv ->
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
			if
			:: fl == OPEN -> fl = SEALED
			:: else -> skip
			fi
		:: else -> skip
		fi
	}
#ifndef BUG_NO_WRITE_MARK
	if
	:: inv -> held = true
	:: else -> skip
	fi;
#endif
	atomic { redisWrite(mine) }
	acked(mine); /* the reply is sent before the unlock */
	lk = false;
	/* Phase 2: an UPDATE with the value written, late or lost. */
	if
	:: inv ->
		if
#ifdef FIX_UPDATE_FILLED
		:: atomic { nent && nver == wv && !nvalid && nfilled -> nvalid = true; ncopy = mine }
#else
		:: atomic { nent && nver == wv -> nvalid = true; ncopy = mine }
#endif
		:: skip
		fi
	:: else -> skip
	fi;
done:
	mine = 0;
	wv = 0;
	inv = false
}

/* The shim's FETCH (serveFetch, redisGetCacheable). */
active proctype ShimFetch() {
	byte id, c, val;
end:
	do
	:: fetchReq?id ->
		atomic { !lk -> lk = true; holder = true }
		markHeld();
		atomic { c = sclock; val = v } /* GET; the clock is read under the lock */
		atomic { lk = false; fetchRep!id, c, val; id = 0; c = 0; val = 0 }
	od
}

/* The shim's GET from the node (serveGets, tracking). */
active proctype ShimGet() {
	bool trk;
	byte val;
end:
	do
	:: getReq?_ ->
		holder = true;
		trk = !lk; /* no write of the key in progress */
		if
		:: trk -> markHeld()
		:: else -> skip
		fi;
		val = v; /* GET */
		atomic { getRep!val, trk; trk = false; val = 0 }
	od
}

/* The cache node. */
active proctype Node() {
	byte id, c, val;
	bool trk;
	byte fetches = 0, evicts = 0, flights = 0;
end:
	do
	/* Insertion: a placeholder and its FETCH, or a refresh of an invalid
	 * entry. */
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
	/* The fill (store.fill). */
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
	/* Eviction, silent. */
	:: atomic {
		nent && evicts < MAXEVICT ->
		nent = false; nvalid = false; nver = 0; ncopy = 0; nfilled = false; evicts++
	}
	/* A miss: a flight of reads, one GET to the shim. */
	:: atomic {
		fl == NOFLIGHT && flights < MAXFLIGHT ->
		fl = OPEN; flights++; getReq!0
	}
	/* The flight's reply: joined readers take it only if tracked. */
	:: atomic {
		getRep?val, trk ->
		if
		:: trk -> assert(val >= jfloor)
		:: else -> skip /* they read again, after they all arrived */
		fi;
		fl = NOFLIGHT; jfloor = 0; val = 0; trk = false
	}
	od
}

/* Readers: one process that reads over and over stands for them all, as
 * a read changes nothing but the flight's floor. */
active proctype Reader() {
	byte floor;
end:
	do
	:: floor = ackedVer; /* the read starts */
		if
		:: atomic { nent && nvalid -> assert(ncopy >= floor) }
		:: atomic { fl == OPEN -> if :: floor > jfloor -> jfloor = floor :: else -> skip fi }
		:: atomic { assert(v >= floor) } /* Redis, directly or through the shim */
		fi;
		floor = 0
	od
}

init {
	byte i;
	atomic {
		if
		:: holder = true /* the node is not flushed yet */
		:: skip
		fi;
		for (i : 1 .. NDIRECT) {
			run Writer(true)
		}
		for (i : 1 .. NSHIM) {
			run Writer(false)
		}
		i = 0
	}
}
