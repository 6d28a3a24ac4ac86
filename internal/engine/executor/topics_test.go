package executor_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// fakeTopics is the TopicAdmin port on a fakeCluster. Each change calls
// during (to look at the lease) before it takes effect.
type fakeTopics struct {
	f       *fakeCluster
	during  func(what string)
	configs map[string]map[string]string
}

func (a *fakeTopics) AlterTopicConfigs(_ context.Context, topic string, set map[string]string, del []string) error {
	if a.during != nil {
		a.during("alter " + topic)
	}
	if a.configs == nil {
		a.configs = map[string]map[string]string{}
	}
	if a.configs[topic] == nil {
		a.configs[topic] = map[string]string{}
	}
	for k, v := range set {
		a.configs[topic][k] = v
	}
	for _, k := range del {
		delete(a.configs[topic], k)
	}
	return nil
}

func (a *fakeTopics) AwaitTopicConfigs(context.Context, string, map[string]string, []string) error {
	return nil
}

func (a *fakeTopics) DeleteTopic(_ context.Context, topic string) error {
	if a.during != nil {
		a.during("delete " + topic)
	}
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	for k, p := range a.f.parts {
		if p.topic == topic {
			delete(a.f.parts, k)
		}
	}
	return nil
}

func (a *fakeTopics) AwaitTopicReady(context.Context, string, int, int) error { return nil }

// drainOf is an unfinished scale-in that drains brokers and moves one
// partition of each of topics.
func drainOf(key string, brokers []int32, topics ...string) *executor.Operation {
	plan := &engine.Plan{}
	for _, t := range topics {
		m := engine.Move{Topic: t, Partition: 0, OldReplicas: []int32{brokers[0]}, NewReplicas: []int32{1}}
		plan.Groups = append(plan.Groups, engine.Group{Steps: []engine.Step{{Moves: engine.Moves{m}}}})
		plan.Target = append(plan.Target, engine.Partition{Topic: t, Partition: 0, Replicas: []int32{1}})
	}
	return &executor.Operation{Key: key, ID: key + "-op", Kind: executor.KindScaleIn, Phase: executor.PhaseReassign, RemoveBrokers: brokers, Plan: plan}
}

// A topic created while a drain is unfinished is placed around the
// brokers it drains, on every Kafka version (the leaving brokers come
// from the operation's record, not from a cordon), without waiting for
// the lease the drain holds, and balanced over the brokers that stay.
func TestCreateTopic_placesAroundAnUnfinishedDrain(t *testing.T) {
	f := newFakeCluster([]string{"a", "b", "c", "a", "b"}, 5)
	f.addTopic("old", 10, 3, 1<<20)
	store := &memStore{}
	if err := store.Save(context.Background(), drainOf("cluster", []int32{4, 5}, "old")); err != nil {
		t.Fatal(err)
	}
	log := &memLeaseLog{}
	placer := &fakePlacer{f: f}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer, Topics: &fakeTopics{f: f}, Store: store, Lease: lessee(log, "s", time.Second)}, executor.Settings{})
	res, err := ex.CreateTopic(context.Background(), executor.CreateTopicRequest{Topic: "born-during-drain", Partitions: 12, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Leaving, []int32{4, 5}) {
		t.Fatalf("placed around brokers %v; want [4 5]", res.Leaving)
	}
	perBroker := map[int32]int{}
	for _, p := range res.Placed {
		for _, b := range p.Replicas {
			perBroker[b]++
		}
	}
	if perBroker[4]+perBroker[5] != 0 {
		t.Fatalf("new topic has replicas on leaving brokers: %v", perBroker)
	}
	for _, b := range []int32{1, 2, 3} {
		if perBroker[b] != 12 {
			t.Fatalf("broker %d holds %d of the 36 new replicas; want 12 each on the 3 brokers that stay: %v", b, perBroker[b], perBroker)
		}
	}
	if recs := log.all(); len(recs) != 0 {
		t.Fatalf("the creation wrote %d lease records; a creation takes no lease", len(recs))
	}
}

// A drain that begins between the read of the unfinished operations and
// the creation is refused by Kafka's cordon; the creation reads the
// operations again and places around it, instead of failing.
func TestCreateTopic_placesAgainAfterACordonRefusal(t *testing.T) {
	f := newFakeCluster([]string{"a", "b", "c", "a"}, 4)
	store := &memStore{}
	placer := &fakePlacer{f: f, createTopicErr: fmt.Errorf("%w: broker 4 is cordoned", executor.ErrCordoned)}
	placer.onRefuse = func() {
		if err := store.Save(context.Background(), drainOf("cluster", []int32{4})); err != nil {
			t.Error(err)
		}
	}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer, Topics: &fakeTopics{f: f}, Store: store}, executor.Settings{})
	res, err := ex.CreateTopic(context.Background(), executor.CreateTopicRequest{Topic: "t", Partitions: 6, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Placed {
		if slices.Contains(p.Replicas, 4) {
			t.Fatalf("t p%d placed on %v after the drain of broker 4 was on record", p.Partition, p.Replicas)
		}
	}
}

// A refusal that placing again cannot cure is Kafka's refusal of
// kafkascale's assignment: it names the brokers, and is not reported as
// the user's replication factor.
func TestCreateTopic_refusalNamesThePlacement(t *testing.T) {
	f := newFakeCluster([]string{"a", "b", "c"}, 3)
	placer := &fakePlacer{f: f, createTopicErr: fmt.Errorf("INVALID_REPLICA_ASSIGNMENT: policy")}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer, Topics: &fakeTopics{f: f}, Store: &memStore{}}, executor.Settings{})
	_, err := ex.CreateTopic(context.Background(), executor.CreateTopicRequest{Topic: "t", Partitions: 3, ReplicationFactor: 3})
	if err == nil || !strings.Contains(err.Error(), "Kafka refused to create topic t on brokers [1 2 3], where kafkascale placed it") {
		t.Fatalf("error %v; want Kafka's refusal of the placement on brokers [1 2 3]", err)
	}
}

// A config change or a deletion of a topic an unfinished operation moves
// runs under the lease, and the log says it waits; the same change of a
// topic no operation moves takes no lease at all.
func TestTopicChanges_waitForTheLeaseOnlyBesideAnOperationThatMovesTheTopic(t *testing.T) {
	for _, tc := range []struct {
		name, topic string
		wantLease   bool
	}{
		{"moved topic", "moving", true},
		{"untouched topic", "quiet", false},
	} {
		for _, change := range []string{"alter", "delete"} {
			t.Run(tc.name+"/"+change, func(t *testing.T) {
				f := newFakeCluster([]string{"a", "b", "c"}, 3)
				f.addTopic("moving", 1, 1, 1)
				f.addTopic("quiet", 1, 1, 1)
				store := &memStore{}
				if err := store.Save(context.Background(), drainOf("cluster", []int32{3}, "moving")); err != nil {
					t.Fatal(err)
				}
				log := &memLeaseLog{}
				rec := &logRecorder{clock: &fakeClock{now: time.Unix(0, 0)}}
				held := false
				topics := &fakeTopics{f: f, during: func(string) {
					h, ok := executor.ReplayLease(log.all()).Holder()
					held = ok && h.Holding
				}}
				ex := executor.New(executor.Deps{Kafka: f, Topics: topics, Store: store, Log: rec, Lease: lessee(log, "s", time.Second)}, executor.Settings{})
				var err error
				if change == "alter" {
					err = ex.AlterTopicConfigs(context.Background(), executor.TopicConfigRequest{ID: "c1", Topic: tc.topic, Set: map[string]string{"retention.ms": "1000"}})
				} else {
					err = ex.DeleteTopic(context.Background(), executor.TopicDeleteRequest{ID: "d1", Topic: tc.topic})
				}
				if err != nil {
					t.Fatal(err)
				}
				if held != tc.wantLease {
					t.Fatalf("%s of %s ran with the lease held = %v; want %v", change, tc.topic, held, tc.wantLease)
				}
				said := false
				for _, l := range rec.lines {
					said = said || strings.HasPrefix(l.msg, "waiting for the operation lease")
				}
				if said != tc.wantLease {
					t.Fatalf("the log says it waits for the lease: %v; want %v", said, tc.wantLease)
				}
				if !tc.wantLease && len(log.all()) != 0 {
					t.Fatalf("%s of an untouched topic wrote %d lease records", change, len(log.all()))
				}
			})
		}
	}
}

// A growth made while a drain is paused between two runs (it holds no
// lease then) places nothing on the brokers the drain removes.
func TestGrowPartitions_placesAroundAPausedDrain(t *testing.T) {
	f := newFakeCluster([]string{"a", "b", "c", "a"}, 4)
	f.addTopic("events", 4, 2, 1<<20)
	store := &memStore{}
	if err := store.Save(context.Background(), drainOf("cluster", []int32{4}, "events")); err != nil {
		t.Fatal(err)
	}
	placer := &fakePlacer{f: f}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer, Store: store}, executor.Settings{})
	res, err := ex.GrowPartitions(context.Background(), executor.GrowRequest{ID: "g", Topic: "events", Partitions: 12})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Added {
		if slices.Contains(p.Replicas, 4) {
			t.Fatalf("events p%d placed on %v while broker 4 drains", p.Partition, p.Replicas)
		}
	}
}

// A replication factor change made while a drain of broker 4 is unfinished
// (paused, or its run killed: it holds no lease) puts no replica on broker
// 4 and takes the topic's replicas off it, for both directions: Kafka's
// cordon would refuse a move onto it, and on Kafka without the cordon the
// broker would be stopped holding them. Found by make soak, seed 2.
func TestChangeReplicationFactor_placesAroundAnUnfinishedDrain(t *testing.T) {
	for _, rf := range []int{2, 3} {
		t.Run(fmt.Sprint(rf), func(t *testing.T) {
			r := newRig(t, 4, 8)
			r.f.addTopic("keyed", 8, 5-rf, 1<<20)
			if err := r.store.Save(context.Background(), drainOf("cluster/test", []int32{4}, "orders")); err != nil {
				t.Fatal(err)
			}
			if _, err := r.ex.ChangeReplicationFactor(context.Background(), executor.ReplicationFactorRequest{
				Key: "topic/test/keyed", ID: "op-rf", Topic: "keyed", ReplicationFactor: rf, Throttle: 10 << 20}); err != nil {
				t.Fatal(err)
			}
			for k, p := range r.f.parts {
				if p.topic == "keyed" && (len(p.replicas) != rf || slices.Contains(p.replicas, 4)) {
					t.Errorf("%s has replicas %v; want %d, none on broker 4, which an unfinished operation drains", k, p.replicas, rf)
				}
			}
		})
	}
}
