package engine

import (
	"math/bits"
	"sort"
)

// srcList is one broker's partitions sorted by size, from which replicas
// leave one by one. A bit per entry marks those that left; the search for
// a partition of a wanted size skips them 64 at a time, which stays cheap
// because a broker gives up only its surplus, a small part of its list.
type srcList struct {
	parts []int32
	sizes []int64  // by partition, shared by every list: read directly, not by a call
	gone  []uint64 // bit i%64 of gone[i/64] is set once entry i has left
	// firsts[j] is the size of entry 64*j, the first of each word of
	// gone: the search for a size narrows to 64 entries in this short
	// array, read in sequence, before it reads the partitions' sizes,
	// which are anywhere in memory.
	firsts []int64
}

// newSrcLists builds the list of every broker that source accepts, from the
// partitions' replica sets and their sizes, which are not negative. A
// cluster of millions of replicas needs this to be cheap, so the partitions
// are sorted by size once and dealt out to their brokers in that order, and
// all lists share two allocations.
func newSrcLists(sets [][]int, nb int, sizes []int64, source func(b int) bool) []*srcList {
	// Sizes are not negative, so they order as unsigned keys.
	order := radixOrder(len(sets), func(p int) uint64 { return uint64(sizes[p]) })
	n := make([]int, nb)
	for _, set := range sets {
		for _, b := range set {
			n[b]++
		}
	}
	total := 0
	for b := range nb {
		if source(b) {
			total += n[b]
		}
	}
	parts := make([]int32, 0, total)
	words := func(n int) int { return (n + 63) / 64 }
	gone := make([]uint64, 0, total/64+nb)
	firsts := make([]int64, 0, total/64+nb)
	lists := make([]*srcList, nb)
	for b := range nb {
		if !source(b) || n[b] == 0 {
			continue
		}
		// parts is filled below, in size order, up to its capacity.
		start := len(parts)
		parts = parts[:start+n[b]]
		g := len(gone)
		gone = gone[:g+words(n[b])]
		firsts = firsts[:g+words(n[b])]
		lists[b] = &srcList{sizes: sizes, parts: parts[start : start : start+n[b]], gone: gone[g:len(gone):len(gone)],
			firsts: firsts[g:len(firsts):len(firsts)]}
	}
	// The partitions come in size order, so each one's replica list is a
	// read from anywhere in memory. The lists of a batch are fetched
	// first, all at once, and dealt out after: the fetches then wait on
	// memory together rather than one after another. Reading a list's
	// first broker fetches the list itself.
	var batch [64][]int
	var first [64]int
	for lo := 0; lo < len(order); lo += len(batch) {
		chunk := order[lo:min(lo+len(batch), len(order))]
		for j, p := range chunk {
			batch[j] = sets[p]
			if len(batch[j]) > 0 {
				first[j] = batch[j][0]
			}
		}
		for j, p := range chunk {
			for k, b := range batch[j] {
				if k == 0 {
					b = first[j]
				}
				if s := lists[b]; s != nil {
					s.parts = append(s.parts, p)
				}
			}
		}
	}
	for _, s := range lists {
		if s == nil {
			continue
		}
		for j := range s.firsts {
			s.firsts[j] = sizes[s.part(64*j)]
		}
	}
	return lists
}

// next is the first present entry at or after i (n if none).
func (s *srcList) next(i int) int {
	n := len(s.parts)
	for i < n {
		// The present entries from i on in i's word, lowest first.
		if w := ^s.gone[i/64] >> (i % 64); w != 0 {
			return min(n, i+bits.TrailingZeros64(w))
		}
		i = (i/64 + 1) * 64
	}
	return n
}

// prev is the last present entry at or before i (-1 if none).
func (s *srcList) prev(i int) int {
	for i >= 0 {
		// The present entries up to i in i's word, i's bit moved to the top.
		if w := ^s.gone[i/64] << (63 - i%64); w != 0 {
			return i - bits.LeadingZeros64(w)
		}
		i = i/64*64 - 1
	}
	return -1
}

func (s *srcList) remove(i int) {
	s.gone[i/64] |= 1 << (i % 64)
}

// part is the partition of entry i.
func (s *srcList) part(i int) int { return int(s.parts[i]) }

// closest returns the present entry nearest in size to want that ok accepts,
// trying at most limit entries (limit <= 0: no limit), or -1.
func (s *srcList) closest(want int64, limit int, ok func(p int) bool) int {
	n := len(s.parts)
	// The sizes of l and r are read once each: a read is from anywhere.
	sizeAt := func(i int) int64 {
		if i < 0 || i >= n {
			return 0
		}
		return s.sizes[s.part(i)]
	}
	pos := s.search(want)
	l, r := s.prev(pos-1), s.next(pos)
	sl, sr := sizeAt(l), sizeAt(r)
	for tries := 0; (l >= 0 || r < n) && (limit <= 0 || tries < limit); tries++ {
		if r >= n || (l >= 0 && want-sl <= sr-want) {
			if ok(s.part(l)) {
				return l
			}
			l = s.prev(l - 1)
			sl = sizeAt(l)
		} else {
			if ok(s.part(r)) {
				return r
			}
			r = s.next(r + 1)
			sr = sizeAt(r)
		}
	}
	return -1
}

// search returns the first entry of size want or more (n if none), present
// or not. Entry 64*(j-1) is smaller than want and entry 64*j is not, for
// the j that firsts gives: the entry is between the two.
func (s *srcList) search(want int64) int {
	j := sort.Search(len(s.firsts), func(j int) bool { return s.firsts[j] >= want })
	lo, hi := max(0, 64*(j-1)), min(len(s.parts), 64*j)
	return lo + sort.Search(hi-lo, func(i int) bool { return s.sizes[s.part(lo+i)] >= want })
}
