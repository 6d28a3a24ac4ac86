package engine

import (
	"cmp"
	"math/rand"
	"slices"
	"testing"
)

// TestRadixOrder checks radixOrder against a stable comparison sort, on
// keys that share bytes (whole MiB), that differ in every byte, and that
// are all equal or absent.
func TestRadixOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	gens := map[string]func() uint64{
		"mib":   func() uint64 { return uint64(r.Intn(2000)+1) << 20 },
		"any":   func() uint64 { return r.Uint64() },
		"small": func() uint64 { return uint64(r.Intn(3)) },
		"same":  func() uint64 { return 42 },
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 255, 1000} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = gen()
			}
			want := make([]int32, n)
			for i := range want {
				want[i] = int32(i)
			}
			slices.SortStableFunc(want, func(a, b int32) int { return cmp.Compare(keys[a], keys[b]) })
			if got := radixOrder(n, func(i int) uint64 { return keys[i] }); !slices.Equal(got, want) {
				t.Errorf("%s, %d keys: order %v, want %v", name, n, got, want)
			}
		}
	}
}
