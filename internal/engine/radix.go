package engine

import "slices"

// radixOrder returns 0..n-1 ordered by key, then index. It is a radix sort
// of the indices, a byte of the key at a time from the lowest, each pass
// stable, so equal keys keep index order. At a million items it is several
// times faster than a comparison sort, and it reads each key a few times
// in sequence instead of comparing through pointers. Bytes that every key
// shares (sizes in whole MiB have three) are skipped.
func radixOrder(n int, key func(i int) uint64) []int32 {
	order, spare := make([]int32, n), make([]int32, n)
	var most uint64
	for i := range order {
		order[i] = int32(i)
		most = max(most, key(i))
	}
	for shift := 0; shift < 64 && most>>shift > 0; shift += 8 {
		digit := func(i int32) int { return int(key(int(i)) >> shift & 0xff) }
		var at [256]int
		for _, i := range order {
			at[digit(i)]++
		}
		if slices.Contains(at[:], n) {
			continue
		}
		start := 0
		for d, c := range at {
			at[d], start = start, start+c
		}
		for _, i := range order {
			d := digit(i)
			spare[at[d]] = i
			at[d]++
		}
		order, spare = spare, order
	}
	return order
}
