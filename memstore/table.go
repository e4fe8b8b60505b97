package memstore

// table is a shard's hash table: open addressing with linear probing and
// backward-shift deletion (no tombstones). A slot is a 32-bit hash (0 means
// empty) and a block; a key is compared only when the hashes match. It is
// not safe for concurrent use: the shard's lock guards it.
//
// It exists instead of a Go map to keep the memory per entry small: a slot
// costs 12 bytes, against a map slot of key header plus value struct.
type table struct {
	hashes []uint32
	blocks []block
	n      int
}

const minTableSize = 8

func (t *table) mask() uint32 { return uint32(len(t.hashes) - 1) }

// find returns the slot of key, or -1.
func (t *table) find(h uint32, key string) int {
	if t.n == 0 {
		return -1
	}
	m := t.mask()
	for i := h & m; ; i = (i + 1) & m {
		switch t.hashes[i] {
		case 0:
			return -1
		case h:
			if blockKey(t.blocks[i]) == key {
				return int(i)
			}
		}
	}
}

// nextWithHash returns the first slot after slot after (-1: from the
// start of h's probe run) that holds hash h, or -1 at the end of the run.
func (t *table) nextWithHash(h uint32, after int) int {
	if t.n == 0 {
		return -1
	}
	m := t.mask()
	i := h & m
	if after >= 0 {
		i = (uint32(after) + 1) & m
	}
	for ; t.hashes[i] != 0; i = (i + 1) & m {
		if t.hashes[i] == h {
			return int(i)
		}
	}
	return -1
}

// get returns key's block, or nil.
func (t *table) get(h uint32, key string) block {
	if i := t.find(h, key); i >= 0 {
		return t.blocks[i]
	}
	return nil
}

// add stores b, whose key is not in the table.
func (t *table) add(h uint32, b block) {
	if (t.n+1)*4 > len(t.hashes)*3 {
		t.resize(max(minTableSize, 2*len(t.hashes)))
	}
	m := t.mask()
	i := h & m
	for t.hashes[i] != 0 {
		i = (i + 1) & m
	}
	t.hashes[i], t.blocks[i] = h, b
	t.n++
}

// removeAt empties slot i, shifting later entries of the probe run back so
// that every entry stays reachable from its home slot.
func (t *table) removeAt(i int) {
	m := t.mask()
	hole := uint32(i)
	for j := (hole + 1) & m; t.hashes[j] != 0; j = (j + 1) & m {
		home := t.hashes[j] & m
		// Move j into the hole unless its home lies cyclically in (hole, j].
		if (j-home)&m >= (j-hole)&m {
			t.hashes[hole], t.blocks[hole] = t.hashes[j], t.blocks[j]
			hole = j
		}
	}
	t.hashes[hole], t.blocks[hole] = 0, nil
	t.n--
	if len(t.hashes) > 64 && t.n*8 < len(t.hashes) {
		t.resize(len(t.hashes) / 2)
	}
}

func (t *table) resize(size int) {
	oldH, oldB := t.hashes, t.blocks
	t.hashes, t.blocks = make([]uint32, size), make([]block, size)
	m := t.mask()
	for k, h := range oldH {
		if h == 0 {
			continue
		}
		i := h & m
		for t.hashes[i] != 0 {
			i = (i + 1) & m
		}
		t.hashes[i], t.blocks[i] = h, oldB[k]
	}
}

func (t *table) reset() { *t = table{} }
