package engine

import (
	"math/bits"
	"slices"
	"sort"
)

// srcList is one broker's partitions sorted by size, from which replicas
// leave one by one. A bit per entry marks those that left; the search for
// a partition of a wanted size skips them 64 at a time, which stays cheap
// because a broker gives up only its surplus, a small part of its list.
type srcList struct {
	parts []int32
	size  func(p int) int64
	gone  []uint64 // bit i%64 of gone[i/64] is set once entry i has left
}

// newSrcLists builds the list of every broker that source accepts, from the
// partitions' replica sets; sizes are not negative. A cluster of millions of replicas needs this to
// be cheap, so the partitions are sorted by size once and dealt out to their
// brokers in that order, and all lists share two allocations.
func newSrcLists(sets [][]int, nb int, size func(p int) int64, source func(b int) bool) []*srcList {
	order := bySize(len(sets), size)
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
		lists[b] = &srcList{size: size, parts: parts[start : start : start+n[b]], gone: gone[g:len(gone):len(gone)]}
	}
	for _, p := range order {
		for _, b := range sets[p] {
			if s := lists[b]; s != nil {
				s.parts = append(s.parts, p)
			}
		}
	}
	return lists
}

// bySize returns the partitions 0..n-1 ordered by size, then index. It is
// a radix sort of the indices, a byte of the size at a time from the lowest,
// each pass stable, so equal sizes keep index order. At a million
// partitions it is several times faster than a comparison sort. Bytes that
// every size shares (sizes in whole MiB have three) are skipped.
func bySize(n int, size func(p int) int64) []int32 {
	order, spare := make([]int32, n), make([]int32, n)
	var most int64
	for p := range order {
		order[p] = int32(p)
		most = max(most, size(p))
	}
	for shift := 0; shift < 64 && most>>shift > 0; shift += 8 {
		digit := func(p int32) int { return int(size(int(p)) >> shift & 0xff) }
		var at [256]int
		for _, p := range order {
			at[digit(p)]++
		}
		if slices.Contains(at[:], n) {
			continue
		}
		start := 0
		for d, c := range at {
			at[d], start = start, start+c
		}
		for _, p := range order {
			d := digit(p)
			spare[at[d]] = p
			at[d]++
		}
		order, spare = spare, order
	}
	return order
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
	sizeAt := func(i int) int64 { return s.size(s.part(i)) }
	pos := sort.Search(n, func(i int) bool { return sizeAt(i) >= want })
	l, r := s.prev(pos-1), s.next(pos)
	for tries := 0; (l >= 0 || r < n) && (limit <= 0 || tries < limit); tries++ {
		var c int
		if r >= n || (l >= 0 && want-sizeAt(l) <= sizeAt(r)-want) {
			c, l = l, s.prev(l-1)
		} else {
			c, r = r, s.next(r+1)
		}
		if ok(s.part(c)) {
			return c
		}
	}
	return -1
}
