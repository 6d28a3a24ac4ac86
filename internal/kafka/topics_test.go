package kafka

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request building is kept apart from sending, so these need no broker.

func TestBuildCreatePartitionsSendsExplicitAssignments(t *testing.T) {
	req, err := buildCreatePartitions([]NewPartitions{
		{Topic: "orders", Count: 8, Assignment: [][]int32{{3, 1}, {1, 2}}},
		{Topic: "audit", Count: 4},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if req.ValidateOnly {
		t.Error("a real request was built as a dry run")
	}
	if len(req.Topics) != 2 || req.Topics[0].Topic != "audit" || req.Topics[1].Topic != "orders" {
		t.Fatalf("topics %+v, want audit then orders", req.Topics)
	}
	if got := req.Topics[0]; got.Count != 4 || got.Assignment != nil {
		t.Errorf("audit: count %d, assignment %v; want 4 and none (the controller places)", got.Count, got.Assignment)
	}
	o := req.Topics[1]
	var rs [][]int32
	for _, a := range o.Assignment {
		rs = append(rs, a.Replicas)
	}
	if o.Count != 8 || !reflect.DeepEqual(rs, [][]int32{{3, 1}, {1, 2}}) {
		t.Errorf("orders: count %d, assignment %v; want 8 and [[3 1] [1 2]] in order", o.Count, rs)
	}

	dry, err := buildCreatePartitions([]NewPartitions{{Topic: "orders", Count: 8}}, true)
	if err != nil || !dry.ValidateOnly {
		t.Errorf("dry run: validateOnly %v, err %v", dry != nil && dry.ValidateOnly, err)
	}
}

func TestBuildCreatePartitionsRefusesBadInputBeforeSending(t *testing.T) {
	_, err := buildCreatePartitions([]NewPartitions{
		{Topic: "a", Count: 2},
		{Topic: "a", Count: 3},
		{Topic: "b", Count: 0},
		{Topic: "c", Count: 3, Assignment: [][]int32{{1}, {}}},
		{Topic: "", Count: 1},
	}, false)
	if err == nil {
		t.Fatal("bad input was accepted")
	}
	for _, want := range []string{"topic a is listed twice", "topic b: partition count 0 is below 1", "topic c: new partition 1 of the assignment has no replicas", "a topic name is empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestBuildAlterTopicConfigsUsesSetAndDeleteOnly(t *testing.T) {
	req := buildAlterTopicConfigs("orders", map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}, []string{"segment.ms", "flush.ms"}, true)
	if !req.ValidateOnly || len(req.Resources) != 1 {
		t.Fatalf("request %+v", req)
	}
	r := req.Resources[0]
	if r.ResourceType != kmsg.ConfigResourceTypeTopic || r.ResourceName != "orders" {
		t.Fatalf("resource %v %q", r.ResourceType, r.ResourceName)
	}
	var got []string
	for _, c := range r.Configs {
		v := "<nil>"
		if c.Value != nil {
			v = *c.Value
		}
		got = append(got, fmt.Sprintf("%s %s=%s", c.Op, c.Name, v))
	}
	want := []string{"SET cleanup.policy=compact", "SET retention.ms=1000", "DELETE flush.ms=<nil>", "DELETE segment.ms=<nil>"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("configs %v, want %v", got, want)
	}
}

func TestBuildValidateCreateTopicIsADryRunByCount(t *testing.T) {
	req := buildValidateCreateTopic("orders", 12, 3, map[string]string{"min.insync.replicas": "2"})
	if !req.ValidateOnly || len(req.Topics) != 1 {
		t.Fatalf("request %+v", req)
	}
	tp := req.Topics[0]
	if tp.NumPartitions != 12 || tp.ReplicationFactor != 3 || len(tp.ReplicaAssignment) != 0 {
		t.Errorf("topic %+v: want 12 partitions, RF 3, no assignment", tp)
	}
	if len(tp.Configs) != 1 || tp.Configs[0].Name != "min.insync.replicas" || *tp.Configs[0].Value != "2" {
		t.Errorf("configs %+v", tp.Configs)
	}
}

func TestTopicErrorKindNamesTheSetting(t *testing.T) {
	msg := "Invalid value abc for configuration retention.ms"
	cases := []struct {
		code int16
		want TopicErrorKind
	}{
		{kerr.TopicAlreadyExists.Code, TopicErrorExists},
		{kerr.UnknownTopicOrPartition.Code, TopicErrorNotFound},
		{kerr.InvalidTopicException.Code, TopicErrorInvalidName},
		{kerr.InvalidPartitions.Code, TopicErrorInvalidPartitions},
		{kerr.InvalidReplicationFactor.Code, TopicErrorInvalidReplicationFactor},
		{kerr.InvalidReplicaAssignment.Code, TopicErrorInvalidReplicaAssignment},
		{kerr.InvalidConfig.Code, TopicErrorInvalidConfig},
		{kerr.PolicyViolation.Code, TopicErrorPolicy},
		{kerr.NotController.Code, TopicErrorOther},
	}
	for _, tc := range cases {
		te := topicError("orders", tc.code, &msg)
		var errs TopicErrors
		errs = append(errs, te)
		got, ok := TopicErrorOf(fmt.Errorf("wrapped: %w", errs.orNil()))
		if !ok || got.Kind() != tc.want {
			t.Errorf("code %d: kind %v (found %v), want %v", tc.code, got.Kind(), ok, tc.want)
		}
		if !strings.Contains(got.Error(), "topic orders") || !strings.Contains(got.Error(), msg) {
			t.Errorf("error %q lacks the topic or the broker's message", got)
		}
	}
	if topicError("orders", 0, nil) != nil {
		t.Error("no error code must give no error")
	}
	if !errors.Is(topicError("x", kerr.TopicAlreadyExists.Code, nil), kerr.TopicAlreadyExists) {
		t.Error("TopicError must unwrap to Kafka's error")
	}
}

func TestSameConfigValueIgnoresSpacesInLists(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"compact,delete", "compact, delete", true},
		{"compact,delete", "delete,compact", false},
		{"1000", "1000", true},
		{"1000", "1000 ", true},
		{"1000", "10000", false},
		{"a,b", "a", false},
	}
	for _, tc := range cases {
		if got := SameConfigValue(tc.a, tc.b); got != tc.want {
			t.Errorf("SameConfigValue(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestKeyEvidence(t *testing.T) {
	if !IsCompacted("delete, compact") || IsCompacted("delete") || IsCompacted("") {
		t.Error("IsCompacted misreads cleanup.policy")
	}
	none := KeyEvidence{SampledPartitions: 3}
	if none.Keyed() || none.Reason() != "" {
		t.Errorf("unkeyed evidence reads as keyed: %q", none.Reason())
	}
	many := KeyEvidence{KeyedPartitions: []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}
	if r := many.Reason(); !many.Keyed() || !strings.Contains(r, "p0, p1") || !strings.Contains(r, "and 2 more") {
		t.Errorf("reason %q", r)
	}
	if r := (KeyEvidence{Compacted: true}).Reason(); !strings.Contains(r, "compact") {
		t.Errorf("reason %q does not name compaction", r)
	}
}

func TestPartitionsReady(t *testing.T) {
	d := TopicDescription{Name: "t", Partitions: []PartitionState{
		{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{2, 1}},
		{Partition: 1, Leader: -1, Replicas: []int32{2, 3}, ISR: []int32{2, 3}},
	}}
	live := []int32{1, 2, 3}
	if ok, why := partitionsReady(d, 2, 2, live); ok || !strings.Contains(why, "t p1 has no leader") {
		t.Errorf("leaderless partition passed: %v %q", ok, why)
	}
	d.Partitions[1].Leader = 2
	d.Partitions[1].ISR = []int32{2}
	if ok, why := partitionsReady(d, 2, 2, live); ok || !strings.Contains(why, "in-sync replicas [2] of [2 3]") {
		t.Errorf("short ISR passed: %v %q", ok, why)
	}
	// Broker 3 is down: its replica cannot be in sync, and is not waited
	// for.
	if ok, why := partitionsReady(d, 2, 2, []int32{1, 2}); !ok {
		t.Errorf("a replica on a broker that is down is waited for: %s", why)
	}
	d.Partitions[1].ISR = []int32{3, 2}
	if ok, why := partitionsReady(d, 3, 2, live); ok || !strings.Contains(why, "2 of 3 partitions") {
		t.Errorf("missing partition passed: %v %q", ok, why)
	}
	if ok, why := partitionsReady(d, 2, 3, live); ok || !strings.Contains(why, "want 3") {
		t.Errorf("wrong replication factor passed: %v %q", ok, why)
	}
	if ok, why := partitionsReady(d, 2, 2, live); !ok {
		t.Errorf("ready topic refused: %s", why)
	}
}

func TestReplicationFactors(t *testing.T) {
	d := TopicDescription{Partitions: []PartitionState{{Replicas: []int32{1, 2, 3}}, {Replicas: []int32{1, 2}}, {Replicas: []int32{2, 3}}}}
	if got := d.ReplicationFactors(); !reflect.DeepEqual(got, []int{2, 3}) {
		t.Errorf("ReplicationFactors %v, want [2 3]", got)
	}
}
