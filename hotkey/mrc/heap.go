package mrc

// hashHeap is a max-heap of the sampled key hashes: its top is the key that
// fixed-size SHARDS evicts when the sample set overflows.
type hashHeap struct {
	hashes []uint64
}

func newHashHeap(capacity int) hashHeap {
	return hashHeap{hashes: make([]uint64, 0, capacity)}
}

func (h *hashHeap) reset() { h.hashes = h.hashes[:0] }

func (h *hashHeap) push(x uint64) {
	h.hashes = append(h.hashes, x)
	i := len(h.hashes) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if h.hashes[parent] >= x {
			break
		}
		h.hashes[i] = h.hashes[parent]
		i = parent
	}
	h.hashes[i] = x
}

// popMax removes and returns the largest hash; the heap must not be empty.
func (h *hashHeap) popMax() uint64 {
	top := h.hashes[0]
	last := len(h.hashes) - 1
	x := h.hashes[last]
	h.hashes = h.hashes[:last]
	if last == 0 {
		return top
	}
	i := 0
	for {
		child := 2*i + 1
		if child >= last {
			break
		}
		if right := child + 1; right < last && h.hashes[right] > h.hashes[child] {
			child = right
		}
		if h.hashes[child] <= x {
			break
		}
		h.hashes[i] = h.hashes[child]
		i = child
	}
	h.hashes[i] = x
	return top
}
