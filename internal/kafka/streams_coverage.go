package kafka

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Covered checks that each name in want (a topic, or a subtopology) owns
// partitions 0..want-1, each exactly once, and nothing beyond; owners
// counts the members owning each partition. The reason lists the gaps.
func Covered(owners map[string]map[int32]int, want map[string]int32) (bool, string) {
	var gaps []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		for p := range want[n] {
			switch c := owners[n][p]; {
			case c == 0:
				gaps = append(gaps, fmt.Sprintf("%s/%d unassigned", n, p))
			case c > 1:
				gaps = append(gaps, fmt.Sprintf("%s/%d assigned %d times", n, p, c))
			}
		}
		for p := range owners[n] {
			if p >= want[n] {
				gaps = append(gaps, fmt.Sprintf("%s/%d beyond its %d partitions", n, p, want[n]))
			}
		}
	}
	if len(gaps) == 0 {
		return true, ""
	}
	slices.Sort(gaps)
	if len(gaps) > 6 {
		gaps = append(gaps[:6], fmt.Sprintf("and %d more", len(gaps)-6))
	}
	return false, strings.Join(gaps, ", ")
}
