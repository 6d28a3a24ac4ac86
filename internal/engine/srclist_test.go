package engine

import (
	"math/rand"
	"testing"
)

// TestSrcListSkipsRemoved checks next and prev against a plain scan, on
// lists around the 64-entry word boundaries, as entries leave at random.
func TestSrcListSkipsRemoved(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 63, 64, 65, 200} {
		sets := make([][]int, n)
		for i := range sets {
			sets[i] = []int{0}
		}
		sizes := make([]int64, n)
		for p := range sizes {
			sizes[p] = int64(p % 7)
		}
		s := newSrcLists(sets, 1, sizes, func(int) bool { return true })[0]
		gone := make([]bool, n)
		for range n {
			k := r.Intn(n)
			s.remove(k)
			gone[k] = true
			for i := range n {
				want := i
				for want < n && gone[want] {
					want++
				}
				if got := s.next(i); got != want {
					t.Fatalf("n=%d: next(%d) = %d, want %d", n, i, got, want)
				}
				want = i
				for want >= 0 && gone[want] {
					want--
				}
				if got := s.prev(i); got != want {
					t.Fatalf("n=%d: prev(%d) = %d, want %d", n, i, got, want)
				}
			}
		}
	}
}

// TestSrcListSearch checks the search through the words' first sizes
// against a plain binary search over every entry, for lists around the
// 64-entry word boundaries with runs of equal sizes.
func TestSrcListSearch(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, n := range []int{1, 63, 64, 65, 128, 129, 1000} {
		sets := make([][]int, n)
		sizes := make([]int64, n)
		for i := range sets {
			sets[i] = []int{0}
			sizes[i] = int64(r.Intn(n/8+2)) * 10
		}
		s := newSrcLists(sets, 1, sizes, func(int) bool { return true })[0]
		for want := int64(-5); want <= int64(n/8+3)*10; want += 5 {
			got := s.search(want)
			exp := 0
			for exp < n && sizes[s.part(exp)] < want {
				exp++
			}
			if got != exp {
				t.Fatalf("%d entries, want %d: entry %d, expected %d", n, want, got, exp)
			}
		}
	}
}
