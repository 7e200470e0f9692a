package antireplay

// WindowLen is how many sequence numbers behind the highest one a window
// remembers: a datagram that far behind or further is refused.
const WindowLen = 128

// Window is the sliding window of one sender's epoch, as IPsec's and
// DTLS's anti-replay window (RFC 4303 §3.4.3): the highest sequence
// number accepted and a bitmap of the WindowLen numbers ending at it.
// Bit i of the bitmap (word i/64, bit i%64) is set once high-i was
// accepted. The zero value is a window started at 0.
type Window struct {
	high uint64
	bits [2]uint64
}

// Start starts the window at seq, accepted, with nothing else seen. The
// Filter starts a window only where no datagram of the epoch can have
// been accepted before, or only ones stamped before its floor, which it
// refuses on their time.
func (w *Window) Start(seq uint64) {
	w.high = seq
	w.bits = [2]uint64{1, 0}
}

// Check reports what Accept would do with seq, changing nothing.
func (w *Window) Check(seq uint64) Verdict {
	if seq > w.high {
		return Accepted
	}
	d := w.high - seq
	if d >= WindowLen {
		return TooOld
	}
	if w.bits[d/64]&(1<<(d%64)) != 0 {
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
		w.slide(seq - w.high)
		w.high = seq
	}
	d := w.high - seq
	w.bits[d/64] |= 1 << (d % 64)
	return Accepted
}

// slide moves the bitmap n numbers on: bit i becomes bit i+n.
func (w *Window) slide(n uint64) {
	switch {
	case n >= WindowLen:
		w.bits = [2]uint64{}
	case n >= 64:
		w.bits = [2]uint64{0, w.bits[0] << (n - 64)}
	default:
		w.bits = [2]uint64{w.bits[0] << n, w.bits[1]<<n | w.bits[0]>>(64-n)}
	}
}
