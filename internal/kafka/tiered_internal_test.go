package kafka

import "testing"

// KIP-1023 is counted only when every alive broker says it is on: a
// broker that says off, says nothing or does not answer makes the plan
// count the larger copy, the leader's whole local log.
func TestTieringOf(t *testing.T) {
	on := map[string]string{ConfigRemoteLogStorageSystemEnable: "true", ConfigFollowerFetchLastTieredOffset: "true"}
	off := map[string]string{ConfigRemoteLogStorageSystemEnable: "true", ConfigFollowerFetchLastTieredOffset: "false"}
	unset := map[string]string{ConfigRemoteLogStorageSystemEnable: "true"}
	none := map[string]string{ConfigRemoteLogStorageSystemEnable: "false"}
	for _, tc := range []struct {
		name    string
		alive   int
		answers map[string]map[string]string
		want    tieredCluster
	}{
		{"every broker with KIP-1023", 3, map[string]map[string]string{"1": on, "2": on, "3": on}, tieredCluster{enabled: true, fetchLastTiered: true}},
		{"one broker without it", 3, map[string]map[string]string{"1": on, "2": off, "3": on}, tieredCluster{enabled: true}},
		{"one broker not saying", 3, map[string]map[string]string{"1": on, "2": unset, "3": on}, tieredCluster{enabled: true}},
		{"one broker not answering", 3, map[string]map[string]string{"1": on, "2": on}, tieredCluster{enabled: true}},
		{"no remote storage", 3, map[string]map[string]string{"1": none, "2": none, "3": none}, tieredCluster{}},
		{"no broker alive", 0, nil, tieredCluster{}},
	} {
		if got := tieringOf(tc.alive, tc.answers); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
