package engine

import (
	"cmp"
	"slices"
)

// sourceSet holds the brokers that balanceCounts takes replicas from, with
// each one's surplus of replicas and its bytes above its share per surplus
// replica (shed). For a destination that needs dv bytes per replica, the
// source is a removed broker (it must drain) first, then the one whose shed
// is nearest dv, then the one with the larger surplus, then the lowest
// index. The others are kept ordered by shed, so the nearest is found from
// dv outwards: a scan of every source for each of ~10^5 moves cost more
// than the moves' own search.
type sourceSet struct {
	sur    []int
	shed   []int64
	drain  []int // removed brokers with replicas left, by index
	byShed []int // the other sources, by shed, then index
}

func newSourceSet(nb int) *sourceSet {
	return &sourceSet{sur: make([]int, nb), shed: make([]int64, nb)}
}

// set records broker b's figures. A broker with no surplus left is no
// longer a source.
func (s *sourceSet) set(b int, removed bool, surplus int, shed int64) {
	list := &s.byShed
	if removed {
		list = &s.drain
	}
	if k := slices.Index(*list, b); k >= 0 {
		*list = slices.Delete(*list, k, k+1)
	}
	s.sur[b], s.shed[b] = surplus, shed
	if surplus <= 0 {
		return
	}
	var k int
	if removed {
		k, _ = slices.BinarySearch(s.drain, b)
	} else {
		k, _ = slices.BinarySearchFunc(s.byShed, b, func(a, b int) int {
			return cmp.Or(cmp.Compare(s.shed[a], s.shed[b]), cmp.Compare(a, b))
		})
	}
	*list = slices.Insert(*list, k, b)
}

// pick returns the best source that ok accepts for a destination that
// needs dv bytes per replica, or -1.
func (s *sourceSet) pick(dv int64, ok func(b int) bool) int {
	u, uDist := -1, int64(0)
	better := func(b int, dist int64) bool {
		return u < 0 || dist < uDist || (dist == uDist && (s.sur[b] > s.sur[u] || (s.sur[b] == s.sur[u] && b < u)))
	}
	for _, b := range s.drain {
		if dist := abs64(s.shed[b] - dv); ok(b) && better(b, dist) {
			u, uDist = b, dist
		}
	}
	if u >= 0 {
		return u
	}
	// Outwards from dv, in order of distance: once a source is accepted,
	// only those as near can still beat it.
	r, _ := slices.BinarySearchFunc(s.byShed, dv, func(b int, want int64) int { return cmp.Compare(s.shed[b], want) })
	l := r - 1
	for l >= 0 || r < len(s.byShed) {
		var b int
		if r >= len(s.byShed) || (l >= 0 && dv-s.shed[s.byShed[l]] <= s.shed[s.byShed[r]]-dv) {
			b, l = s.byShed[l], l-1
		} else {
			b, r = s.byShed[r], r+1
		}
		dist := abs64(s.shed[b] - dv)
		if u >= 0 && dist > uDist {
			break
		}
		if ok(b) && better(b, dist) {
			u, uDist = b, dist
		}
	}
	return u
}
