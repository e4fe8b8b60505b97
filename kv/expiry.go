package kv

// expiryItem says that an entry whose key hashes to h was due to expire at
// at. The entry may since have been replaced, deleted or given another TTL;
// the sweeper re-checks the table before removing anything. The item holds
// the hash, not the block: a pointer would keep a replaced block (up to a
// whole value) alive until the item surfaced.
type expiryItem struct {
	at int64
	h  uint32
}

// expiryHeap is a binary min-heap on at. It is written out rather than
// built on container/heap to avoid boxing every item in an interface.
type expiryHeap []expiryItem

func (h *expiryHeap) push(it expiryItem) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

func (h *expiryHeap) pop() expiryItem {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	if last > 0 {
		h.down(0)
	}
	return top
}

func (h expiryHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].at <= h[i].at {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func (h expiryHeap) down(i int) {
	for {
		least := i
		if l := 2*i + 1; l < len(h) && h[l].at < h[least].at {
			least = l
		}
		if r := 2*i + 2; r < len(h) && h[r].at < h[least].at {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}
