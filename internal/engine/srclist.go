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
	parts []int
	sizes []int64
	right []int32 // right[i] == i while entry i is present; index n is a sentinel
	left  []int32 // left[i+1] == i+1 while entry i is present; index 0 is a sentinel
}

func newSrcList(parts []int, size func(p int) int64) *srcList {
	type entry struct {
		size int64
		part int
	}
	es := make([]entry, len(parts))
	for i, p := range parts {
		es[i] = entry{size(p), p}
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.size, b.size), cmp.Compare(a.part, b.part))
	})
	n := len(es)
	s := &srcList{parts: make([]int, n), sizes: make([]int64, n)}
	for i, e := range es {
		s.parts[i], s.sizes[i] = e.part, e.size
	}
	s.right = make([]int32, n+1)
	s.left = make([]int32, n+1)
	for i := range s.right {
		s.right[i] = int32(i)
		s.left[i] = int32(i)
	}
	return s
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

// closest returns the present entry nearest in size to want that ok accepts,
// trying at most limit entries (limit <= 0: no limit), or -1.
func (s *srcList) closest(want int64, limit int, ok func(p int) bool) int {
	n := len(s.parts)
	pos := sort.Search(n, func(i int) bool { return s.sizes[i] >= want })
	l, r := s.prev(pos-1), s.next(pos)
	for tries := 0; (l >= 0 || r < n) && (limit <= 0 || tries < limit); tries++ {
		var c int
		if r >= n || (l >= 0 && want-s.sizes[l] <= s.sizes[r]-want) {
			c, l = l, s.prev(l-1)
		} else {
			c, r = r, s.next(r+1)
		}
		if ok(s.parts[c]) {
			return c
		}
	}
	return -1
}
