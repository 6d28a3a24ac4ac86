package executor_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// demotion is a finished rebalance of the cluster resource, started at, that
// demotes brokers (its record is where every working directory reads the
// demotion from).
func demotion(at time.Time, brokers ...int32) *executor.Operation {
	opts := engine.DefaultOptions()
	opts.DemotedBrokers = brokers
	return &executor.Operation{Key: "cluster/c", ID: "rebalance-" + at.Format(time.RFC3339Nano), Kind: executor.KindRebalance,
		Phase: executor.PhaseCompleted, Options: opts, StartedAt: at}
}

// ledBy counts the partitions each broker is the preferred leader of.
func ledBy(ps []engine.Partition) map[int32]int {
	out := map[int32]int{}
	for _, p := range ps {
		out[p.Replicas[0]]++
	}
	return out
}

// A topic created, or grown, from another working directory while the
// cluster resource demotes a broker does not make it the preferred leader
// of a new partition: the demotion is read from the operation log, not
// from the cluster resource's configuration, which only its own working
// directory has. Before, the cluster resource's next plan showed the
// reorders that undid it.
func TestNewPartitionsKeepTheDemotionOnRecord(t *testing.T) {
	f := newFakeCluster([]string{"a", "b", "c"}, 3)
	f.addTopic("old", 6, 3, 1<<20)
	store := &memStore{}
	if err := store.Save(context.Background(), demotion(time.Unix(100, 0), 1)); err != nil {
		t.Fatal(err)
	}
	placer := &fakePlacer{f: f}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer, Topics: &fakeTopics{f: f}, Store: store}, executor.Settings{})
	ctx := context.Background()

	created, err := ex.CreateTopic(ctx, executor.CreateTopicRequest{Topic: "born-demoted", Partitions: 12, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if led := ledBy(created.Placed); led[1] != 0 || led[2]+led[3] != 12 {
		t.Errorf("new topic's preferred leaders per broker %v; want none on demoted broker 1", led)
	}
	grown, err := ex.GrowPartitions(ctx, executor.GrowRequest{ID: "grow", Topic: "born-demoted", Partitions: 18})
	if err != nil {
		t.Fatal(err)
	}
	if led := ledBy(grown.Added); led[1] != 0 || len(grown.Added) != 6 {
		t.Errorf("grown partitions' preferred leaders per broker %v (%d added); want none on demoted broker 1", led, len(grown.Added))
	}

	// A later operation of the cluster without the demotion lifts it:
	// broker 1 leads its share of a new topic again.
	if err := store.Save(ctx, demotion(time.Unix(200, 0))); err != nil {
		t.Fatal(err)
	}
	after, err := ex.CreateTopic(ctx, executor.CreateTopicRequest{Topic: "born-after", Partitions: 12, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if led := ledBy(after.Placed); led[1] == 0 {
		t.Errorf("after the demotion was lifted, new topic's preferred leaders per broker %v; want broker 1 to lead some", led)
	}
}

// A replication factor change under a demotion leaves the demoted broker
// preferred leader of none of the topic's partitions, where it would
// otherwise be the first replica left of some.
func TestReplicationFactorChangeKeepsTheDemotion(t *testing.T) {
	f := newFakeCluster([]string{"a", "b", "c"}, 3)
	f.addTopic("events", 6, 3, 1<<20)
	snap, err := f.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := executor.PreviewReplicationFactor(snap, "events", 2, 10<<20, nil, []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plan.Target {
		if p.Topic == "events" && p.Replicas[0] == 1 && !slices.Equal(p.Replicas, []int32{1}) {
			t.Errorf("events p%d heads for %v: demoted broker 1 stays its preferred leader", p.Partition, p.Replicas)
		}
	}
	if len(plan.Target) == 0 {
		t.Fatal("the change planned nothing")
	}
}

// A demotion the apply has nothing to do for (the broker leads nothing
// yet) is recorded all the same, as is its end: topics created from
// another working directory read it from the operation log.
func TestDemotionWithNothingToMoveIsRecorded(t *testing.T) {
	f := newFakeCluster([]string{"a", "b", "c"}, 3)
	store := &memStore{}
	ex := executor.New(executor.Deps{Kafka: f, Placer: &fakePlacer{f: f}, Topics: &fakeTopics{f: f}, Store: store}, executor.Settings{})
	ctx := context.Background()
	demote := func(id string, brokers ...int32) {
		t.Helper()
		req := scaleReq(3)
		req.Key, req.ID, req.Balance = "cluster/c", id, executor.BalanceLeaders
		req.Options.DemotedBrokers = brokers
		op, err := ex.Scale(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if op == nil || op.ID != id || !op.Done() || !slices.Equal(op.Options.DemotedBrokers, brokers) || op.Plan.ReplicaMoves != 0 {
			t.Fatalf("demotion of %v returned %+v; want operation %s recorded, completed, moving nothing", brokers, op, id)
		}
	}
	demote("demote-1", 1)
	created, err := ex.CreateTopic(ctx, executor.CreateTopicRequest{Topic: "after-demotion", Partitions: 12, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if led := ledBy(created.Placed); led[1] != 0 {
		t.Errorf("new topic's preferred leaders per broker %v; want none on demoted broker 1", led)
	}
	// Lifted while broker 1 still leads nothing: recorded too.
	time.Sleep(time.Millisecond) // a later StartedAt than the demotion's
	demote("lift")
	after, err := ex.CreateTopic(ctx, executor.CreateTopicRequest{Topic: "after-lift", Partitions: 12, ReplicationFactor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if led := ledBy(after.Placed); led[1] == 0 {
		t.Errorf("after the demotion was lifted, new topic's preferred leaders per broker %v; want broker 1 to lead some", led)
	}
}
