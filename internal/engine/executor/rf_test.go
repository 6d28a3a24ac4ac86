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

// Lowering the replication factor only removes replicas: the partition's
// replicas before the move are also the union of old and new, which is what
// Metadata shows while a move runs. Such a move must still be submitted
// (once) and the operation must reach its target.
func TestReplicationFactorDecreaseSubmitsRemovals(t *testing.T) {
	r := newRig(t, 6, 12)
	snap, err := r.f.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := engine.PlanReassignment(snap, engine.Change{ReplicationFactor: map[string]int{"orders": 2}}, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Moves()) == 0 || plan.ReplicaMoves != 0 {
		t.Fatalf("plan has %d moves and %d copies; want drop-only moves", len(plan.Moves()), plan.ReplicaMoves)
	}
	// A drop copies nothing, so nothing is throttled at any point.
	var throttled []string
	r.f.onPoll = func(int) {
		if left := r.f.throttlesLeft(); left != "" {
			throttled = append(throttled, left)
		}
	}
	op, err := r.ex.RunPlan(context.Background(), "topic/test/orders", "op-rf", executor.KindReplicationFactor, plan, 10<<20)
	if err != nil {
		t.Fatalf("lowering the replication factor: %v", err)
	}
	r.assertAtTarget(t, op)
	for _, m := range plan.Moves() {
		if n := r.f.submitted[key(m.Topic, m.Partition)]; n != 1 {
			t.Errorf("%s p%d (%v -> %v) submitted %d times, want once", m.Topic, m.Partition, m.OldReplicas, m.NewReplicas, n)
		}
	}
	if len(throttled) > 0 {
		t.Errorf("a change that copies nothing was throttled: %s", throttled[0])
	}
	for _, p := range r.f.parts {
		if len(p.replicas) != 2 {
			t.Errorf("%s p%d has replicas %v, want 2", p.topic, p.part, p.replicas)
		}
	}
}

// The executor's one entry point for a replication factor change plans
// from the cluster itself, moves only the topic's replicas and reaches the
// new factor on every partition.
func TestChangeReplicationFactorMovesOnlyTheTopic(t *testing.T) {
	r := newRig(t, 4, 8)
	r.f.addTopic("events", 6, 2, 4<<20)
	before := map[string][]int32{}
	for k, p := range r.f.parts {
		if p.topic == "orders" {
			before[k] = append([]int32(nil), p.replicas...)
		}
	}
	op, err := r.ex.ChangeReplicationFactor(context.Background(), executor.ReplicationFactorRequest{
		Key: "topic/test/events", ID: "op-rf", Topic: "events", ReplicationFactor: 3, Throttle: 10 << 20})
	if err != nil {
		t.Fatalf("raising events to 3 replicas: %v", err)
	}
	if op == nil || op.Kind != executor.KindReplicationFactor || !op.Done() {
		t.Fatalf("operation %+v, want a finished replication-factor operation", op)
	}
	r.assertAtTarget(t, op)
	for k, p := range r.f.parts {
		switch p.topic {
		case "events":
			if len(p.replicas) != 3 {
				t.Errorf("%s has replicas %v, want 3", k, p.replicas)
			}
		case "orders":
			if !engine.SameMembers(p.replicas, before[k]) {
				t.Errorf("%s moved from %v to %v although only events changed", k, before[k], p.replicas)
			}
		}
	}
	// A second call at the same factor has nothing to move.
	again, err := r.ex.ChangeReplicationFactor(context.Background(), executor.ReplicationFactorRequest{
		Key: "topic/test/events", ID: "op-rf-2", Topic: "events", ReplicationFactor: 3, Throttle: 10 << 20})
	if err != nil || (again != nil && again.ID == "op-rf-2") {
		t.Fatalf("repeating the change gave %+v, %v; want nothing new", again, err)
	}
}

// An interrupted replication factor change whose partitions another
// operation moved meanwhile (a drain that resumed while it was stopped;
// the soak's seed 2, step 12) is given up, and, since the configuration
// still asks for the same factor, planned anew from the cluster in the
// same call: the apply succeeds instead of asking the user to run it again.
func TestInterruptedReplicationFactorChangeOutOfDateIsPlannedAnew(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 4, 8)
	r.f.addTopic("events", 6, 2, 4<<20)
	snap, err := r.f.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := executor.PreviewReplicationFactor(snap, "events", 3, 10<<20, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	const opKey = "topic/test/events"
	stale := &executor.Operation{Key: opKey, ID: "op-stale", Kind: executor.KindReplicationFactor, Phase: executor.PhaseReassign,
		Plan: plan, ThrottleRate: 10 << 20}
	if err := r.store.Save(ctx, stale); err != nil {
		t.Fatal(err)
	}
	// Another operation moved a partition the plan moves, to replicas no
	// move of the plan explains.
	m := plan.Moves()[0]
	p := r.f.parts[key(m.Topic, m.Partition)]
	for _, b := range []int32{1, 2, 3, 4} {
		if !slices.Contains(m.OldReplicas, b) && !slices.Contains(m.NewReplicas, b) {
			p.replicas = []int32{m.OldReplicas[0], b}
			p.isr = slices.Clone(p.replicas)
			break
		}
	}
	op, err := r.ex.ChangeReplicationFactor(ctx, executor.ReplicationFactorRequest{
		Key: opKey, ID: "op-anew", Topic: "events", ReplicationFactor: 3, Throttle: 10 << 20})
	if err != nil {
		t.Fatalf("the change after an out-of-date interrupted one: %v", err)
	}
	if op == nil || op.ID != "op-anew" || !op.Done() {
		t.Fatalf("operation %+v; want op-anew, finished", op)
	}
	for k, p := range r.f.parts {
		if p.topic == "events" && len(p.replicas) != 3 {
			t.Errorf("%s has replicas %v, want 3", k, p.replicas)
		}
	}
	if left := r.f.throttlesLeft(); left != "" {
		t.Errorf("throttles left: %s", left)
	}
}

// A replication factor change around a drain that another run left
// unfinished (soak seed 10): the drain's brokers stay cordoned, and Kafka
// refuses a target that lists a cordoned broker even where the replica
// already is. A partition with replicas on two leaving brokers keeps one of
// them for a step whatever the order, so that step lifts the other
// operation's cordon for its submission and sets it again, as the drain's
// own steps do; a partition with one there drops it first.
func TestReplicationFactorChangeAroundAnotherDrainKeepsItsCordon(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 6, 0)
	r.f.addTopic("plain", 6, 3, 4<<20)
	both := false
	for _, p := range r.f.parts {
		both = both || slices.Contains(p.replicas, 2) && slices.Contains(p.replicas, 3)
	}
	if !both {
		t.Fatal("no partition of plain has replicas on both leaving brokers 2 and 3: the test needs one")
	}
	drain := &executor.Operation{Key: "cluster/test", ID: "op-drain", Kind: executor.KindScaleIn, Phase: executor.PhaseReassign,
		TargetBrokerCount: 4, RemoveBrokers: []int32{2, 3}, CordonedBrokers: []int32{2, 3}}
	if err := r.store.Save(ctx, drain); err != nil {
		t.Fatal(err)
	}
	if err := r.f.SetCordon(ctx, []int32{2, 3}, true); err != nil {
		t.Fatal(err)
	}
	r.f.cordonLog = nil
	op, err := r.ex.ChangeReplicationFactor(ctx, executor.ReplicationFactorRequest{
		Key: "topic/test/plain", ID: "op-rf", Topic: "plain", ReplicationFactor: 2, Throttle: 10 << 20})
	if err != nil {
		t.Fatalf("the change around the unfinished drain: %v", err)
	}
	if !op.Done() {
		t.Fatalf("operation %+v; want it finished", op)
	}
	for _, p := range r.f.parts {
		if p.topic == "plain" && (len(p.replicas) != 2 || slices.Contains(p.replicas, 2) || slices.Contains(p.replicas, 3)) {
			t.Errorf("plain p%d has replicas %v, want 2 off the leaving brokers 2 and 3", p.part, p.replicas)
		}
	}
	if left := r.f.cordonsLeft(); !slices.Equal(left, []int32{2, 3}) {
		t.Errorf("cordoned after the change: %v, want the drain's [2 3] as it left them", left)
	}
	lifted := false
	for _, c := range r.f.cordonLog {
		lifted = lifted || strings.Contains(c, "false")
	}
	if !lifted {
		t.Errorf("no step lifted a cordon (%v): the partition on both leaving brokers went untested", r.f.cordonLog)
	}
	if stored, _ := r.store.Load(ctx, "cluster/test"); !slices.Equal(stored.CordonedBrokers, []int32{2, 3}) {
		t.Errorf("the drain's record lists cordoned brokers %v, want [2 3] untouched", stored.CordonedBrokers)
	}
}

// interruptedDrain leaves a scale-in of r's cluster from 6 to 5 brokers
// stopped with its first moves in flight, as an apply cut by its timeout
// leaves them: recorded as started, and still running in Kafka.
func interruptedDrain(t *testing.T, r *rig) *executor.Operation {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.f.onPoll = func(int) {
		for _, p := range r.f.parts {
			if p.target != nil {
				cancel()
			}
		}
	}
	op, err := r.ex.Scale(ctx, scaleReq(5))
	r.f.onPoll = nil
	if err == nil || op == nil || op.Done() {
		t.Fatalf("the interrupted drain: %v, %+v; want it stopped unfinished", err, op)
	}
	inFlight := 0
	for _, p := range r.f.parts {
		if p.target != nil {
			inFlight++
		}
	}
	if inFlight == 0 {
		t.Fatal("the interrupted drain left no move in flight; the test needs some")
	}
	return op
}

// A change of a topic's replication factor applied while another apply's
// drain is stopped with moves in flight (the soak's short seed, step 3:
// a replacement cut by its timeout, then a topic change from the second
// working directory) waits for those moves, which Kafka finishes alone,
// instead of refusing them as another tool's. The drain then resumes to
// completion.
func TestReplicationFactorChangeWaitsForAnInterruptedDrainsMovesInFlight(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, 6, 12)
	r.f.addTopic("plain", 6, 3, 4<<20)
	r.f.reassignPolls = 5
	drain := interruptedDrain(t, r)
	log := &logRecorder{clock: r.clock}
	ex := executor.New(executor.Deps{Kafka: r.f, Scaler: r.sc, Store: r.store, Clock: r.clock, Log: log},
		executor.Settings{PollInterval: time.Second, MinThrottle: 1 << 20, MaxThrottle: 100 << 20})
	op, err := ex.ChangeReplicationFactor(ctx, executor.ReplicationFactorRequest{
		Key: "topic/test/plain", ID: "op-rf", Topic: "plain", ReplicationFactor: 2, Throttle: 10 << 20})
	if err != nil {
		t.Fatalf("the change beside the interrupted drain: %v", err)
	}
	if !op.Done() {
		t.Fatalf("operation %+v; want it finished", op)
	}
	waited := false
	for _, l := range log.lines {
		waited = waited || strings.Contains(l.msg, "waiting for the moves in flight of another unfinished operation") &&
			strings.Contains(fmt.Sprint(l.fields["partitions"]), "operation "+drain.ID)
	}
	if !waited {
		t.Errorf("no log line says the change waited for operation %s's moves", drain.ID)
	}
	for _, p := range r.f.parts {
		if p.topic == "plain" && (len(p.replicas) != 2 || slices.Contains(p.replicas, 6)) {
			t.Errorf("plain p%d has replicas %v, want 2 off the leaving broker 6", p.part, p.replicas)
		}
	}
	done, err := r.ex.Scale(ctx, scaleReq(5))
	if err != nil {
		t.Fatalf("resuming the drain after the change: %v", err)
	}
	if bs, _ := r.f.Brokers(ctx); len(bs) != 5 {
		t.Errorf("%d brokers after the drain resumed (operation %s, phase %s), want 5", len(bs), done.ID, done.Phase)
	}
	for _, p := range r.f.parts {
		if slices.Contains(p.replicas, 6) || p.target != nil {
			t.Errorf("%s p%d: replicas %v (reassigning to %v) after the drain, want none on broker 6 and none moving", p.topic, p.part, p.replicas, p.target)
		}
	}
	if left := r.f.throttlesLeft(); left != "" {
		t.Errorf("throttles left: %s", left)
	}
}

// Waiting for another operation's moves ends with the apply: the error
// names the operation and the partitions, and nothing was changed.
func TestWaitForAnotherOperationsMovesEndsWithTheApply(t *testing.T) {
	r := newRig(t, 6, 12)
	r.f.reassignPolls = 1000
	drain := interruptedDrain(t, r)
	before := r.f.submissions
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.f.onPoll = func(n int) {
		if n > 20 {
			cancel()
		}
	}
	_, err := r.ex.ChangeReplicationFactor(ctx, executor.ReplicationFactorRequest{
		Key: "topic/test/orders", ID: "op-rf", Topic: "orders", ReplicationFactor: 2, Throttle: 10 << 20})
	if err == nil || !strings.Contains(err.Error(), "being moved by operation "+drain.ID) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("the change cut while waiting: %v; want an error naming operation %s's moves and saying nothing was changed", err, drain.ID)
	}
	if r.f.submissions != before {
		t.Errorf("%d reassignments submitted while waiting; want none", r.f.submissions-before)
	}
}
