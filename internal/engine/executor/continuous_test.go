package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// continuousRig is a scale-out 3 -> 5 of 24 partitions with one move per
// broker at a time, so the plan has many groups, and the first move
// submitted copying for 40 polls while the others take 2.
func continuousRig(t *testing.T) (*rig, executor.ScaleRequest, *string) {
	t.Helper()
	r := newRig(t, 3, 24)
	req := scaleReq(5)
	req.Options.MaxMovesPerBroker = 1
	slow := new(string)
	r.f.onAssign = func(as []executor.Assignment) {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		if *slow == "" && len(as) > 0 {
			*slow = key(as[0].Topic, as[0].Partition)
			r.f.slowParts = map[string]int{*slow: 40}
		}
	}
	return r, req, slow
}

// planIndex maps each partition to the groups of its moves.
func groupsOf(p *engine.Plan) map[string][]int {
	out := map[string][]int{}
	p.EachMove(func(g, _ int, m engine.Move) {
		out[key(m.Topic, m.Partition)] = append(out[key(m.Topic, m.Partition)], g)
	})
	return out
}

// Under the continuous schedule a move of a later group starts while a
// slow move of an earlier group still copies, on brokers the slow move does
// not touch; each move is still submitted once, and recorded as started
// before it is submitted.
func TestContinuousScheduleStartsLaterGroupsBesideASlowMove(t *testing.T) {
	r, req, slow := continuousRig(t)
	var overlapped []string
	var unrecorded []string
	base := r.f.onAssign
	r.f.onAssign = func(as []executor.Assignment) {
		base(as)
		stored, _ := r.store.Load(context.Background(), "cluster/test")
		if stored == nil || stored.Plan == nil {
			return
		}
		moves := stored.Plan.Moves()
		started := map[string]bool{}
		for _, k := range stored.Started {
			started[key(moves[k].Topic, moves[k].Partition)] = true
		}
		gs := groupsOf(stored.Plan)
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		slowBusy := r.f.parts[*slow] != nil && r.f.parts[*slow].target != nil
		for _, a := range as {
			k := key(a.Topic, a.Partition)
			if len(gs[k]) == 0 {
				continue // a reorder at the finish
			}
			if !started[k] {
				unrecorded = append(unrecorded, k)
			}
			if slowBusy && k != *slow && slices.Max(gs[k]) > gs[*slow][0] {
				overlapped = append(overlapped, k)
			}
		}
	}
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	if len(op.Plan.Groups) < 3 {
		t.Fatalf("%d groups; the test needs several", len(op.Plan.Groups))
	}
	if len(overlapped) == 0 {
		t.Errorf("no move of a later group started while %s (group %d of %d) copied: the groups still wait for each other",
			*slow, groupsOf(op.Plan)[*slow][0]+1, len(op.Plan.Groups))
	}
	if len(unrecorded) > 0 {
		t.Errorf("submitted before the record said so: %v", unrecorded)
	}
	for k, n := range r.f.submitted {
		if want := len(groupsOf(op.Plan)[k]); n > max(want, 1) {
			t.Errorf("%s submitted %d times for %d move(s)", k, n, want)
		}
	}
	if len(op.Started) != 0 || len(op.Finished) != 0 || op.Group != len(op.Plan.Groups) {
		t.Errorf("completed record keeps group %d, started %v, finished %v", op.Group, op.Started, op.Finished)
	}
	if op.MovesDone != len(op.Plan.Moves()) || op.BytesDone != op.Plan.TotalBytes {
		t.Errorf("completed record counts %d moves and %d bytes done, want %d and %d", op.MovesDone, op.BytesDone, len(op.Plan.Moves()), op.Plan.TotalBytes)
	}
}

// Killed while moves of two groups are in flight, the operation resumes
// from its record: the moves in flight are not submitted again, nothing
// reads as a conflict, and it completes.
func TestContinuousResumeWithTwoGroupsInFlight(t *testing.T) {
	r, req, slow := continuousRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	base := r.f.onAssign
	r.f.onAssign = func(as []executor.Assignment) {
		base(as)
		stored, _ := r.store.Load(context.Background(), "cluster/test")
		if stored == nil || stored.Plan == nil {
			return
		}
		groups := map[int]bool{}
		moves := stored.Plan.Moves()
		gs := groupsOf(stored.Plan)
		for _, k := range stored.Started {
			groups[gs[key(moves[k].Topic, moves[k].Partition)][0]] = true
		}
		if len(groups) >= 2 {
			cancel() // killed: the run stops where it is
		}
	}
	_, err := r.ex.Scale(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Scale returned %v, want context.Canceled", err)
	}
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	if stored == nil || stored.Phase != executor.PhaseReassign || len(stored.Started) < 2 {
		t.Fatalf("stored operation %+v, want phase reassign with moves of two groups started", stored)
	}
	// The record counts the groups before Group and the finished moves.
	want := len(stored.Finished)
	for _, g := range stored.Plan.Groups[:stored.Group] {
		want += len(g.Moves())
	}
	if stored.MovesDone != want {
		t.Errorf("record counts %d moves done; the groups before %d and the %d finished make %d", stored.MovesDone, stored.Group, len(stored.Finished), want)
	}
	r.f.mu.Lock()
	var inFlight []string
	for _, p := range r.f.sortedParts() {
		if p.target != nil {
			inFlight = append(inFlight, key(p.topic, p.part))
		}
	}
	r.f.mu.Unlock()
	if len(inFlight) == 0 || !slices.Contains(inFlight, *slow) {
		t.Fatalf("in flight at the kill: %v; want the slow move %s among them", inFlight, *slow)
	}
	op := r.resumeKilled(t, req, inFlight)
	if got := fmt.Sprint(op.LastError); got != "" {
		t.Errorf("last error %q after the resumed run completed", got)
	}
}

// resumeKilled runs req again after a kill and checks that it completes
// at the plan's target without submitting again the partitions that were
// in flight at the kill.
func (r *rig) resumeKilled(t *testing.T, req executor.ScaleRequest, inFlight []string) *executor.Operation {
	t.Helper()
	r.f.onAssign = nil
	op, err := r.ex.Scale(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	r.assertAtTarget(t, op)
	for _, k := range inFlight {
		if n, want := r.f.submitted[k], len(groupsOf(op.Plan)[k]); n > want {
			t.Errorf("%s, in flight at the kill, submitted %d times for %d move(s)", k, n, want)
		}
	}
	return op
}

// Cancelled while moves of two groups are in flight, every one of them is
// cancelled and reverts, and no throttle is left.
func TestContinuousCancelRevertsEveryGroupInFlight(t *testing.T) {
	r, req, _ := continuousRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	base := r.f.onAssign
	r.f.onAssign = func(as []executor.Assignment) {
		base(as)
		stored, _ := r.store.Load(context.Background(), "cluster/test")
		if stored != nil && stored.Plan != nil && stored.StartedIn(stored.Group) > 0 && stored.StartedIn(stored.Group+1) > 0 {
			cancel()
		}
	}
	if _, err := r.ex.Scale(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Scale returned %v, want context.Canceled", err)
	}
	r.f.onAssign = nil
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	snap, _ := r.f.Snapshot(context.Background())
	preview, _ := executor.PreviewCancel(snap, stored, nil)
	r.f.mu.Lock()
	inFlight := 0
	for _, p := range r.f.parts {
		if p.target != nil {
			inFlight++
		}
	}
	r.f.mu.Unlock()
	if inFlight < 2 || preview.InFlight != inFlight {
		t.Fatalf("%d moves in flight, the cancel preview counts %d; want two groups' worth, all counted", inFlight, preview.InFlight)
	}
	c, err := r.ex.Cancel(context.Background(), "cluster/test", "reverted")
	if err != nil {
		t.Fatal(err)
	}
	if c == nil || c.InFlight != inFlight {
		t.Fatalf("cancel %+v, want %d moves in flight cancelled", c, inFlight)
	}
	r.f.mu.Lock()
	for _, p := range r.f.parts {
		if p.target != nil {
			t.Errorf("%s p%d still reassigning to %v after the cancel", p.topic, p.part, p.target)
		}
	}
	r.f.mu.Unlock()
	if left := r.f.throttlesLeft(); left != "" {
		t.Errorf("throttles left after the cancel: %s", left)
	}
}

// A run that ends (timeout, interrupt) while it throttles the moves it is
// about to start still records every entry it added, so that a cancel
// removes them all: only recorded entries are ever removed.
func TestInterruptedThrottleIsRecorded(t *testing.T) {
	r, req, _ := continuousRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	r.f.onThrottle = func() {
		if calls++; calls == 3 {
			cancel() // the run's timeout, as the third batch is throttled
		}
	}
	if _, err := r.ex.Scale(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Scale returned %v, want context.Canceled", err)
	}
	r.f.onThrottle = nil
	stored, _ := r.store.Load(context.Background(), "cluster/test")
	recorded := map[string]bool{}
	for _, tr := range stored.ThrottledReplicas {
		for _, e := range tr.Leader {
			recorded["leader "+tr.Topic+" "+e] = true
		}
		for _, e := range tr.Follower {
			recorded["follower "+tr.Topic+" "+e] = true
		}
	}
	r.f.mu.Lock()
	for topic, es := range r.f.leaderThr {
		for _, e := range es {
			if !recorded["leader "+topic+" "+e] {
				t.Errorf("leader entry %s %s is on the topic but not in the record", topic, e)
			}
		}
	}
	for topic, es := range r.f.followThr {
		for _, e := range es {
			if !recorded["follower "+topic+" "+e] {
				t.Errorf("follower entry %s %s is on the topic but not in the record", topic, e)
			}
		}
	}
	r.f.mu.Unlock()
	if _, err := r.ex.Cancel(context.Background(), "cluster/test", "reverted"); err != nil {
		t.Fatal(err)
	}
	if left := r.f.throttlesLeft(); left != "" {
		t.Errorf("throttles left after the cancel: %s", left)
	}
}
