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
