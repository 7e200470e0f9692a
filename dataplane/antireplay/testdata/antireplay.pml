/*
 * antireplay.pml: the replay filter of package antireplay (filter.go,
 * window.go) for SPIN. Run by model_test.go (spin -a; gcc -DSAFETY; ./pan).
 *
 * One sender signs messages (epoch, seq, time) and restarts: each run is
 * a new epoch whose sequence numbers start again at 1, and its clock, so
 * a message's time, grows across runs. An attacker holds every message
 * sent and delivers any of them, at any time, as often as it likes:
 * this is also a network that reorders, duplicates and loses. The
 * receiver keeps, while it tracks the sender, the latest epoch, a window
 * of W sequence numbers (high and a bitmap) and the entry's floor; it may
 * forget the sender at any time (eviction), raising its floor to the
 * sender's latest accepted time. A sender it does not track is accepted
 * only with a time after the floor.
 *
 * Property, asserted at every acceptance: no message is accepted twice,
 * and no message of an epoch is accepted after one of a newer epoch.
 *
 * Macros (each removes one rule; the search must then find a violation):
 *   BUG_NO_FLOOR        forgetting the sender does not raise the floor
 *   BUG_NO_ENTRY_FLOOR  an entry does not keep the floor it was made under
 *   BUG_NO_EPOCH        the receiver ignores epochs: one window over seq
 */

#ifndef MAXEPOCH
#define MAXEPOCH 2
#endif
#ifndef MAXSEQ
#define MAXSEQ 4
#endif
#ifndef MAXDELIVER
#define MAXDELIVER 7
#endif
#define W 2
#define MASK 3
#define NMSG (MAXEPOCH * MAXSEQ)

/* What the sender sent, in order: the attacker's collection. */
byte sentEpoch[NMSG];
byte sentSeq[NMSG];
byte sentTime[NMSG];
byte nsent = 0;
byte clock = 0;

/* The receiver. */
bool tracked = false;
byte rEpoch, rHigh, rBits, rEntryFloor, rLast;
byte floor = 0;

/* The property's bookkeeping. */
bool accepted[NMSG];
byte newest = 0;

active proctype Sender() {
	byte e = 1, s;
	do
	:: e <= MAXEPOCH ->
		s = 1;
		do
		:: s <= MAXSEQ ->
			atomic {
				clock++;
				sentEpoch[nsent] = e; sentSeq[nsent] = s; sentTime[nsent] = clock;
				nsent++; s++
			}
		:: s > 1 -> break /* a restart, at any point after one message */
		:: s > MAXSEQ -> break
		od;
		e++
	:: else -> break
	od
}

active proctype Receiver() {
	byte i, d, e, s, t, k = 0;
	bool ok;
	do
	:: k < MAXDELIVER && nsent > 0 ->
		/* the attacker picks any message sent so far */
		i = 0;
		do
		:: i + 1 < nsent -> i++
		:: break
		od;
		atomic {
			k++;
			e = sentEpoch[i]; s = sentSeq[i]; t = sentTime[i];
			ok = false;
#ifdef BUG_NO_EPOCH
			e = 1;
#endif
			if
			:: !tracked ->
				if
				:: t > floor ->
					tracked = true; rEpoch = e; rHigh = s; rBits = 1;
					rEntryFloor = floor; ok = true
				:: else -> skip
				fi
#ifndef BUG_NO_ENTRY_FLOOR
			:: tracked && t <= rEntryFloor -> skip
			:: tracked && t > rEntryFloor ->
#else
			:: tracked ->
#endif
				if
				:: e < rEpoch -> skip
				:: e > rEpoch -> rEpoch = e; rHigh = s; rBits = 1; ok = true
				:: e == rEpoch && s > rHigh ->
					d = s - rHigh;
					if
					:: d >= W -> rBits = 1
					:: else -> rBits = ((rBits << d) | 1) & MASK
					fi;
					rHigh = s; ok = true
				:: e == rEpoch && s <= rHigh ->
					d = rHigh - s;
					if
					:: d >= W -> skip
					:: d < W && ((rBits >> d) & 1) -> skip
					:: d < W && !((rBits >> d) & 1) -> rBits = rBits | (1 << d); ok = true
					fi
				fi
			fi;
			if
			:: ok ->
				if
				:: t > rLast -> rLast = t
				:: else -> skip
				fi;
				e = sentEpoch[i]; /* the real epoch, for the property */
				assert(!accepted[(e - 1) * MAXSEQ + s - 1]);
				accepted[(e - 1) * MAXSEQ + s - 1] = true;
				assert(e >= newest);
				newest = e
			:: else -> skip
			fi
		}
	:: tracked ->
		/* forget the sender (eviction) */
		atomic {
#ifndef BUG_NO_FLOOR
			if
			:: rLast > floor -> floor = rLast
			:: else -> skip
			fi;
#endif
			tracked = false
		}
	:: else -> break
	od
}
