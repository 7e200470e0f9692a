package mrc

import "sync/atomic"

// cacheLineSize is the size the striped counter pads its stripes to.
const cacheLineSize = 64

// counterStripes is the number of stripes of a stripedCounter.
const counterStripes = 16

// stripedCounter is a counter that many goroutines increment without all
// writing to one cache line: an increment goes to the stripe chosen by the
// low bits of the key's hash (independent of the sampling test, which
// compares the whole hash), and a read sums the stripes. Only references to
// the same key, or to keys of one stripe, share a line. A random stripe
// per increment would also spread the references of one hot key, but
// drawing the number made an unsampled Observe about half again slower.
type stripedCounter struct {
	stripes [counterStripes]struct {
		n atomic.Uint64
		_ [cacheLineSize - 8]byte
	}
}

func (c *stripedCounter) inc(hash uint64) {
	c.stripes[hash%counterStripes].n.Add(1)
}

func (c *stripedCounter) load() uint64 {
	var sum uint64
	for i := range c.stripes {
		sum += c.stripes[i].n.Load()
	}
	return sum
}

func (c *stripedCounter) reset() {
	for i := range c.stripes {
		c.stripes[i].n.Store(0)
	}
}
