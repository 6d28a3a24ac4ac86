package engine

import (
	"cmp"
	"slices"
	"sort"
)

// srcList is one broker's partitions sorted by size, from which replicas
// leave one by one. Removed entries are skipped in amortised constant time
// with two union-find arrays, so the search for a partition of a wanted size
// stays cheap however many have already left.
type srcList struct {
	parts []int32
	size  func(p int) int64
	right []int32 // right[i] == i while entry i is present; index n is a sentinel
	left  []int32 // left[i+1] == i+1 while entry i is present; index 0 is a sentinel
}

// newSrcLists builds the list of every broker that source accepts, from the
// partitions' replica sets. A cluster of millions of replicas needs this to
// be cheap, so the partitions are sorted by size once and dealt out to their
// brokers in that order, and all lists share three allocations.
func newSrcLists(sets [][]int, nb int, size func(p int) int64, source func(b int) bool) []*srcList {
	type entry struct {
		size int64
		part int32
	}
	order := make([]entry, len(sets))
	for i := range sets {
		order[i] = entry{size(i), int32(i)}
	}
	slices.SortFunc(order, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.size, b.size), cmp.Compare(a.part, b.part))
	})
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
	// Each list's union-find arrays have one sentinel more than entries,
	// and start with every entry present: links[i] == i.
	links := make([]int32, 0, 2*(total+nb))
	identity := func(n int) []int32 {
		start := len(links)
		for i := range n {
			links = append(links, int32(i))
		}
		return links[start:len(links):len(links)]
	}
	lists := make([]*srcList, nb)
	for b := range nb {
		if !source(b) || n[b] == 0 {
			continue
		}
		// parts is filled below, in size order, up to its capacity.
		start := len(parts)
		parts = parts[:start+n[b]]
		lists[b] = &srcList{size: size, parts: parts[start : start : start+n[b]], right: identity(n[b] + 1), left: identity(n[b] + 1)}
	}
	for _, e := range order {
		for _, b := range sets[e.part] {
			if s := lists[b]; s != nil {
				s.parts = append(s.parts, e.part)
			}
		}
	}
	return lists
}

// next is the first present entry at or after i (n if none).
func (s *srcList) next(i int) int {
	r := i
	for int(s.right[r]) != r {
		r = int(s.right[r])
	}
	for int(s.right[i]) != r {
		i, s.right[i] = int(s.right[i]), int32(r)
	}
	return r
}

// prev is the last present entry at or before i (-1 if none).
func (s *srcList) prev(i int) int {
	j := i + 1
	r := j
	for int(s.left[r]) != r {
		r = int(s.left[r])
	}
	for int(s.left[j]) != r {
		j, s.left[j] = int(s.left[j]), int32(r)
	}
	return r - 1
}

func (s *srcList) remove(i int) {
	s.right[i] = int32(i + 1)
	s.left[i+1] = int32(i)
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
