package executor

import (
	"slices"
	"testing"
)

// An entry added twice (a resumed run throttling its moves in flight
// again) is recorded once: a removal waits until every recorded entry is
// gone from the list, and Kafka's list holds it once.
func TestMergeThrottlesRecordsAnEntryOnce(t *testing.T) {
	have := mergeThrottles(nil, []ThrottledReplicas{{Topic: "ledger", Leader: []string{"1:3", "1:4"}, Follower: []string{"1:5"}}})
	have = mergeThrottles(have, []ThrottledReplicas{
		{Topic: "ledger", Leader: []string{"1:4", "2:1"}, Follower: []string{"1:5"}},
		{Topic: "load", Follower: []string{"0:2", "0:2"}},
	})
	want := []ThrottledReplicas{
		{Topic: "ledger", Leader: []string{"1:3", "1:4", "2:1"}, Follower: []string{"1:5"}},
		{Topic: "load", Follower: []string{"0:2"}},
	}
	if len(have) != len(want) {
		t.Fatalf("merged %+v, want %+v", have, want)
	}
	for i := range want {
		if have[i].Topic != want[i].Topic || !slices.Equal(have[i].Leader, want[i].Leader) || !slices.Equal(have[i].Follower, want[i].Follower) {
			t.Errorf("merged %+v, want %+v", have[i], want[i])
		}
	}
}
