package executor_test

import (
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// Progress counts the groups done from the record and the group in
// progress from its destinations, each replica up to its planned size, and
// takes the copied share of that group off the ETA.
func TestProgressMeasuresTheRunningGroupOnItsDestinations(t *testing.T) {
	const mib = 1 << 20
	move := func(p int32, to int32) engine.Move {
		return engine.Move{Topic: "t", Partition: p, OldReplicas: []int32{1}, NewReplicas: []int32{to}, Adding: []int32{to}, Removing: []int32{1}, Bytes: 10 * mib}
	}
	pl := &engine.Plan{TotalBytes: 40 * mib, ReplicaMoves: 4, Groups: []engine.Group{
		{Steps: []engine.Step{{Moves: []engine.Move{move(0, 2), move(1, 3)}}}, Bytes: 20 * mib, BusiestBrokerBytes: 10 * mib},
		{Steps: []engine.Step{{Moves: []engine.Move{move(2, 2), move(3, 3)}}}, Bytes: 20 * mib, BusiestBrokerBytes: 10 * mib},
	}}
	op := &executor.Operation{Phase: executor.PhaseReassign, Plan: pl, Group: 1, Started: []int{2, 3}, MovesDone: 2, BytesDone: 20 * mib, ThrottleRate: mib}
	want := map[executor.Replica]int64{{Topic: "t", Partition: 2, Broker: 2}: 10 * mib, {Topic: "t", Partition: 3, Broker: 3}: 10 * mib}
	if got := op.Copying(); len(got) != 2 || got[executor.Replica{Topic: "t", Partition: 2, Broker: 2}] != 10*mib || got[executor.Replica{Topic: "t", Partition: 3, Broker: 3}] != 10*mib {
		t.Fatalf("Copying = %v, want %v", got, want)
	}
	p := op.Progress(map[executor.Replica]int64{
		{Topic: "t", Partition: 2, Broker: 2}: 5 * mib,
		{Topic: "t", Partition: 3, Broker: 3}: 50 * mib, // grew while it moved: counts its planned 10 MiB
		{Topic: "t", Partition: 0, Broker: 2}: 10 * mib, // a group done: already in BytesDone
	})
	if p.Group != 2 || p.Groups != 2 || p.MovesDone != 2 || p.Moves != 4 || p.BytesDone != 35*mib || p.Bytes != 40*mib {
		t.Fatalf("progress %+v", p)
	}
	// Broker 1 sends both copies at 1 MiB/s, and 15 of their 20 MiB are
	// there: 5s of copy is left, then the moves are seen done at a poll
	// and the operation finishes.
	if lo, hi := 5*time.Second+engine.FinishTime, 5*time.Second+engine.MoveSettleTime+engine.DefaultPollInterval+engine.FinishTime; p.ETA < lo || p.ETA > hi {
		t.Fatalf("ETA %s, want %s to %s", p.ETA, lo, hi)
	}
	op.Phase, op.Group, op.BytesDone = executor.PhaseCompleted, 2, 40*mib
	if c := op.Copying(); len(c) != 0 {
		t.Fatalf("a completed operation copies %v", c)
	}
	if p := op.Progress(nil); p.BytesDone != 40*mib || p.ETA != 0 || p.Group != 2 {
		t.Fatalf("completed: %+v", p)
	}
}
