package kafka

import (
	"reflect"
	"testing"
)

func TestMissing(t *testing.T) {
	cases := []struct {
		cur  string
		want []string
		out  []string
	}{
		{"", []string{"0:1", "0:2"}, []string{"0:1", "0:2"}},
		{"0:1", []string{"0:1", "0:2"}, []string{"0:2"}},
		{"0:1,0:2", []string{"0:1", "0:2"}, nil},
		{"*", []string{"0:1"}, nil},                      // APPEND onto * is rejected by Kafka
		{"1:3", []string{"0:1", "0:1"}, []string{"0:1"}}, // duplicates asked once
		{" 0:1 , 1:2", []string{"1:2", "2:2"}, []string{"2:2"}},
	}
	for _, c := range cases {
		if got := missing(c.cur, c.want); !reflect.DeepEqual(got, c.out) {
			t.Errorf("missing(%q, %v) = %v, want %v", c.cur, c.want, got, c.out)
		}
	}
}

func TestBuildAlterAssignments(t *testing.T) {
	req := buildAlterAssignments([]Assignment{
		{Topic: "a", Partition: 0, Replicas: []int32{4, 1, 2}},
		{Topic: "a", Partition: 1}, // nil replicas cancels
		{Topic: "b", Partition: 3, Replicas: []int32{5}},
	})
	if got := req["a"][0]; !reflect.DeepEqual(got, []int32{4, 1, 2}) {
		t.Errorf("a p0 = %v", got)
	}
	if got, ok := req["a"][1]; !ok || got != nil {
		t.Errorf("a p1 must be present with nil replicas to cancel, got %v (present %v)", got, ok)
	}
	if got := req["b"][3]; !reflect.DeepEqual(got, []int32{5}) {
		t.Errorf("b p3 = %v", got)
	}
}

func TestReplicaEntry(t *testing.T) {
	if got := ReplicaEntry(12, 1003); got != "12:1003" {
		t.Errorf("ReplicaEntry = %q", got)
	}
}
