package antireplay

// windowWords is the window's bitmap in 64-bit words.
const windowWords = 16

// WindowLen is how many sequence numbers behind the highest one a window
// remembers: a datagram that far behind or further is refused. A sender
// takes a datagram's number when it signs it, and its goroutines sign and
// send concurrently: one descheduled between the two sends behind others'
// datagrams. 1,024 numbers (as Linux's largest IPsec replay window) covers
// about 5 ms of a sender at 200,000 signed datagrams a second; a datagram
// sent later than that is refused and its request sent again.
const WindowLen = windowWords * 64

// Window is the sliding window of one sender's epoch, as IPsec's and
// DTLS's anti-replay window (RFC 4303 §3.4.3): the highest sequence
// number accepted and a bitmap of the WindowLen numbers ending at it. The
// bitmap is a ring, as Linux's extended-sequence replay window: number s
// is bit s mod WindowLen, so moving the window on by n clears n bits and
// shifts nothing (n is 1 for datagrams in order). The zero value is a
// window started at 0.
type Window struct {
	high uint64
	bits [windowWords]uint64
}

// Start starts the window at seq, accepted, with nothing else seen. The
// Filter starts a window only where no datagram of the epoch can have
// been accepted before, or only ones stamped before its floor, which it
// refuses on their time.
func (w *Window) Start(seq uint64) {
	w.high = seq
	w.bits = [windowWords]uint64{}
	w.set(seq)
}

// Check reports what Accept would do with seq, changing nothing.
func (w *Window) Check(seq uint64) Verdict {
	if seq > w.high {
		return Accepted
	}
	if w.high-seq >= WindowLen {
		return TooOld
	}
	if w.has(seq) {
		return Duplicate
	}
	return Accepted
}

// Accept marks seq seen and reports Accepted, or reports why it refuses
// seq (Duplicate, TooOld) and changes nothing.
func (w *Window) Accept(seq uint64) Verdict {
	if v := w.Check(seq); v != Accepted {
		return v
	}
	if seq > w.high {
		w.advance(seq)
	}
	w.set(seq)
	return Accepted
}

// advance moves the window's end to seq: the bits of the numbers after
// the old end up to seq held numbers WindowLen earlier, now out of the
// window, and are cleared.
func (w *Window) advance(seq uint64) {
	if seq-w.high >= WindowLen {
		w.bits = [windowWords]uint64{}
	} else {
		for s := w.high + 1; s <= seq; s++ {
			w.bits[(s%WindowLen)/64] &^= 1 << (s % 64)
		}
	}
	w.high = seq
}

func (w *Window) set(seq uint64) { w.bits[(seq%WindowLen)/64] |= 1 << (seq % 64) }

func (w *Window) has(seq uint64) bool { return w.bits[(seq%WindowLen)/64]&(1<<(seq%64)) != 0 }
