package executor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// A topic's update runs its configs first (a lower min.insync.replicas is
// in force before the replication factor drops), then the replication
// factor, then the growth, whose new partitions take the new factor.
func TestUpdateTopic_runsConfigsThenReplicationFactorThenGrowth(t *testing.T) {
	r := newRig(t, 3, 6)
	topics := &fakeTopics{f: r.f}
	ex := executor.New(executor.Deps{Kafka: r.f, Placer: &fakePlacer{f: r.f}, Topics: topics, Store: r.store, Clock: r.clock}, executor.Settings{})
	var insyncAtRF string
	err := ex.UpdateTopic(context.Background(), executor.UpdateTopicRequest{ID: "u", Topic: "orders",
		Set: map[string]string{"min.insync.replicas": "1"}, ReplicationFactor: 2, Key: "topic/test/orders", Throttle: 10 << 20,
		BeforeReplicationFactor: func(context.Context) error {
			insyncAtRF = topics.configs["orders"]["min.insync.replicas"]
			return nil
		},
		Partitions: 9})
	if err != nil {
		t.Fatal(err)
	}
	if insyncAtRF != "1" {
		t.Fatalf("min.insync.replicas was %q when the replication factor change began; want the new 1 in force", insyncAtRF)
	}
	n := 0
	for _, p := range r.f.sortedParts() {
		if p.topic != "orders" {
			continue
		}
		n++
		if len(p.replicas) != 2 {
			t.Errorf("orders p%d has replicas %v; want 2", p.part, p.replicas)
		}
	}
	if n != 9 {
		t.Fatalf("orders has %d partitions; want 9", n)
	}
}

// A step that fails stops the update and says which it was: the steps
// after it do not run.
func TestUpdateTopic_saysWhichStepFailed(t *testing.T) {
	r := newRig(t, 3, 6)
	ex := executor.New(executor.Deps{Kafka: r.f, Placer: &fakePlacer{f: r.f}, Topics: &fakeTopics{f: r.f}, Store: r.store, Clock: r.clock}, executor.Settings{})
	refused := errors.New("refused")
	err := ex.UpdateTopic(context.Background(), executor.UpdateTopicRequest{ID: "u", Topic: "orders", ReplicationFactor: 2, Key: "topic/test/orders",
		BeforeReplicationFactor: func(context.Context) error { return refused }, Partitions: 9})
	var failed *executor.UpdateTopicError
	if !errors.As(err, &failed) || failed.Step != executor.StepReplicationFactor || !errors.Is(err, refused) {
		t.Fatalf("got %v; want the replication factor step to fail with the hook's error", err)
	}
	n := 0
	for _, p := range r.f.sortedParts() {
		if p.topic == "orders" {
			n++
			if len(p.replicas) != 3 {
				t.Errorf("orders p%d has replicas %v after the failed step; want its 3 unchanged", p.part, p.replicas)
			}
		}
	}
	if n != 6 {
		t.Fatalf("orders grew to %d partitions after the failed step; want 6", n)
	}
}
