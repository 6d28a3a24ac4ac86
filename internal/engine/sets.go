package engine

// SameMembers reports whether a and b hold the same elements, each as
// often, in any order: replica lists and broker sets compare this way
// everywhere. It allocates nothing; the lists it sees are replica lists,
// a handful long, so the quadratic count is cheaper than sorting copies.
func SameMembers[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if count(a, x) != count(b, x) {
			return false
		}
	}
	return true
}

func count[T comparable](s []T, x T) int {
	n := 0
	for _, y := range s {
		if y == x {
			n++
		}
	}
	return n
}

// slab hands out short slices carved from large allocations. A plan at
// millions of replicas holds that many short lists; allocating each alone
// would cost more than planning them.
type slab[T any] struct{ free []T }

// take returns a zeroed slice of n elements, with no room to grow into its
// neighbours.
func (s *slab[T]) take(n int) []T {
	if cap(s.free)-len(s.free) < n {
		s.free = make([]T, 0, max(1<<16, n))
	}
	start := len(s.free)
	s.free = s.free[:start+n]
	return s.free[start : start+n : start+n]
}

// clone returns a copy of src from the slab.
func (s *slab[T]) clone(src []T) []T {
	out := s.take(len(src))
	copy(out, src)
	return out
}
