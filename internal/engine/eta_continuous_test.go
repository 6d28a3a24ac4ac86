package engine_test

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

const contMiB = 1 << 20

// copyMove is a move of a partition of size bytes from broker from to
// broker to, its sender.
func copyMove(partition int32, from, to int32, size int64) engine.Move {
	return engine.Move{Topic: "t", Partition: partition, OldReplicas: []int32{from}, NewReplicas: []int32{to},
		Adding: []int32{to}, Removing: []int32{from}, Bytes: size}
}

// handPlan makes a plan of one group per list of moves, each in one step,
// with the groups' bytes and busiest broker as the planner counts them.
func handPlan(groups ...[]engine.Move) *engine.Plan {
	p := &engine.Plan{}
	for _, ms := range groups {
		g := engine.Group{Steps: []engine.Step{{Moves: ms}}}
		in, out := map[int32]int64{}, map[int32]int64{}
		for _, m := range ms {
			g.Bytes += m.Bytes
			for _, b := range m.Adding {
				in[b] += m.Bytes / int64(len(m.Adding))
			}
			if len(m.OldReplicas) > 0 {
				out[m.OldReplicas[0]] += m.Bytes
			}
		}
		for _, v := range in {
			g.BusiestBrokerBytes = max(g.BusiestBrokerBytes, v)
		}
		for _, v := range out {
			g.BusiestBrokerBytes = max(g.BusiestBrokerBytes, v)
		}
		p.Groups = append(p.Groups, g)
	}
	return p
}

func near(got, want, tol time.Duration) bool { return got >= want-tol && got <= want+tol }

// One group of equal moves, each from its own broker onto its own: they
// all copy at the throttle at once, so the copy is one move's bytes at the
// throttle, as the groups' estimate says.
func TestEstimateContinuousOneGroup(t *testing.T) {
	var ms []engine.Move
	for i := range int32(4) {
		ms = append(ms, copyMove(i, 10+i, 20+i, 80*contMiB))
	}
	p := handPlan(ms)
	in := engine.ETAInputs{Throttle: 8 * contMiB}
	e := engine.EstimateContinuous(p, nil, nil, 0, in)
	g := engine.EstimateGroups(p.Groups, in)
	if !near(e.Copying, 10*time.Second, engine.DefaultPollInterval) || !near(e.Copying, g.Copying, engine.DefaultPollInterval) {
		t.Fatalf("copying %s, want 10s as the groups' %s", e.Copying, g.Copying)
	}
	if e.Groups != 1 || e.Bytes != 320*contMiB || e.CatchingUp != 0 || e.Finishing != engine.FinishTime {
		t.Fatalf("groups %d, bytes %d, catching up %s, finishing %s", e.Groups, e.Bytes, e.CatchingUp, e.Finishing)
	}
	// The start of the moves and the poll that sees them done, at most a
	// poll beyond the settle time.
	if e.Settling < engine.GroupSettleTime || e.Settling > engine.GroupSettleTime+engine.MoveSettleTime+engine.DefaultPollInterval {
		t.Fatalf("settling %s", e.Settling)
	}
	if e.Total() != e.Adding+e.Copying+e.CatchingUp+e.Settling+e.Finishing+e.Removing {
		t.Fatalf("total %s is not the sum of the parts of %+v", e.Total(), e)
	}
	t.Logf("continuous %s, groups %s", e, g)
}

// Two groups on different brokers: the groups run one after the other,
// the continuous schedule runs them together.
func TestEstimateContinuousNoBarrier(t *testing.T) {
	p := handPlan(
		[]engine.Move{copyMove(0, 10, 20, 80*contMiB), copyMove(1, 12, 20, 80*contMiB)},
		[]engine.Move{copyMove(2, 11, 21, 80*contMiB), copyMove(3, 13, 21, 80*contMiB)},
	)
	in := engine.ETAInputs{Throttle: 8 * contMiB}
	e := engine.EstimateContinuous(p, nil, nil, 0, in)
	g := engine.EstimateGroups(p.Groups, in)
	if g.Copying != 40*time.Second {
		t.Fatalf("the groups copy in %s, want 40s", g.Copying)
	}
	if !near(e.Copying, 20*time.Second, engine.DefaultPollInterval) || e.Copying > g.Copying*6/10 {
		t.Fatalf("continuous copying %s, want about 20s, clearly under the groups' %s", e.Copying, g.Copying)
	}
	if e.Groups != 2 || e.Bytes != 320*contMiB {
		t.Fatalf("groups %d, bytes %d", e.Groups, e.Bytes)
	}
	t.Logf("continuous %s; groups %s", e, g)
}

// Many empty moves onto one broker: nothing to copy, and the receiver's
// work per move, serial, is the time: n × MoveSettleTime, plus the start
// and the poll that sees the last one. With or without a throttle.
func TestEstimateContinuousManyEmptyMoves(t *testing.T) {
	const n = 300
	var ms []engine.Move
	for i := range int32(n) {
		ms = append(ms, copyMove(i, 1+i%3, 20, 0))
	}
	p := handPlan(ms)
	want := n * engine.MoveSettleTime
	for _, throttle := range []int64{8 * contMiB, 0} {
		e := engine.EstimateContinuous(p, nil, nil, n, engine.ETAInputs{Throttle: throttle})
		if e.Copying != 0 || e.CatchingUp != 0 {
			t.Fatalf("throttle %d: copying %s, catching up %s of empty moves", throttle, e.Copying, e.CatchingUp)
		}
		if !near(e.Settling, want, 2*engine.DefaultPollInterval) {
			t.Fatalf("throttle %d: settling %s, want %s within two polls", throttle, e.Settling, want)
		}
		t.Logf("throttle %d: settling %s for %d empty moves (n × MoveSettleTime = %s)", throttle, e.Settling, n, want)
	}
	// With two moves per broker at a time, each pair waits for a poll.
	e := engine.EstimateContinuous(p, nil, nil, 2, engine.ETAInputs{Throttle: 8 * contMiB})
	if e.Settling < n/2*engine.DefaultPollInterval {
		t.Fatalf("two moves per broker per poll: settling %s, under %d polls", e.Settling, n/2)
	}
	t.Logf("two moves per broker: settling %s", e.Settling)
}

// A move in flight with half its bytes copied has half its copy left.
func TestEstimateContinuousCopied(t *testing.T) {
	p := handPlan([]engine.Move{copyMove(0, 10, 20, 80*contMiB)})
	in := engine.ETAInputs{Throttle: 8 * contMiB}
	whole := engine.EstimateContinuous(p, nil, nil, 0, in)
	half := engine.EstimateContinuous(p, []engine.MoveState{engine.MoveInFlight}, []int64{40 * contMiB}, 0, in)
	if !near(whole.Copying, 10*time.Second, time.Millisecond) || !near(half.Copying, 5*time.Second, time.Millisecond) {
		t.Fatalf("copying %s, then %s half copied: want 10s and 5s", whole.Copying, half.Copying)
	}
	if half.Bytes != 40*contMiB || half.Groups != 1 {
		t.Fatalf("half copied: %d bytes left in %d groups", half.Bytes, half.Groups)
	}
	// Done: nothing left but the finish.
	done := engine.EstimateContinuous(p, []engine.MoveState{engine.MoveDone}, nil, 0, in)
	if done.Groups != 0 || done.Bytes != 0 || done.Copying != 0 || done.Settling != 0 || done.Total() != 0 {
		t.Fatalf("all done, yet %+v", done)
	}
}

// Writes to a moving partition make its copy longer; at the throttle they
// flag the receiver.
func TestEstimateContinuousGrowth(t *testing.T) {
	in := engine.ETAInputs{Throttle: 8 * contMiB}
	m := copyMove(0, 10, 20, 60*contMiB)
	m.GrowthBytesPerSec = 2 * contMiB
	e := engine.EstimateContinuous(handPlan([]engine.Move{m}), nil, nil, 0, in)
	// 60 MiB gaining 6 MiB/s: 10s, 2.5s more than the copy alone.
	if !near(e.Copying, 7500*time.Millisecond, time.Millisecond) || !near(e.CatchingUp, 2500*time.Millisecond, time.Millisecond) {
		t.Fatalf("copying %s, catching up %s: want 7.5s and 2.5s", e.Copying, e.CatchingUp)
	}
	if len(e.Saturated) != 0 || e.GrowthBytesPerSec != 2*contMiB {
		t.Fatalf("saturated %v, growth %v", e.Saturated, e.GrowthBytesPerSec)
	}

	m.GrowthBytesPerSec = 7.5 * contMiB
	other := copyMove(1, 11, 20, 8*contMiB)
	other.GrowthBytesPerSec = 7.5 * contMiB
	e = engine.EstimateContinuous(handPlan([]engine.Move{m, other}), nil, nil, 0, in)
	if !reflect.DeepEqual(e.Saturated, []int32{20}) {
		t.Fatalf("saturated %v, want [20] once", e.Saturated)
	}
	if e.CatchingUp <= 0 {
		t.Fatalf("saturated, yet no catch-up: %+v", e)
	}
	t.Logf("%s", e)
}

// Over the random clusters: the continuous copy is never shorter than what
// the busiest broker sends or receives at the throttle (less a poll), and
// almost never longer than the groups'. Same input, same estimate.
//
// "Never longer than the groups'" does not hold of Schedule.Ready's schedule:
// a greedy start can leave the bottleneck broker idle where the groups
// kept it busy. In the session that found it, seed 102 was one: brokers 4
// and 6 sent every move and held every removal slot; the groups kept
// broker 6 sending all along (44.6s), a schedule that waited for the
// earlier groups' receivers idled it (49.1s). Under the room check five
// plans are over, by at most 8% (seed 195, a scale-in). The same
// simulation with the groups' barrier gave the groups' copy on every
// plan, to the second, so the model agrees with EstimateGroups and the
// difference is the schedule's. The test allows such plans within 15% and
// few of them, and logs each.
func TestPropertyEstimateContinuous(t *testing.T) {
	const seeds = 300
	tol := engine.DefaultPollInterval
	var plans, over, inTurn int
	var sumCont, sumGroups, sumBound time.Duration
	eachRandomPlan(t, seeds, func(seed int64, rc randomCase, p *engine.Plan) {
		in := engine.ETAInputs{Throttle: rc.o.ThrottleBytesPerSec}
		e := engine.EstimateContinuous(p, nil, nil, rc.o.MaxMovesPerBroker, in)
		g := engine.EstimateGroups(p.Groups, in)
		in2 := map[int32]int64{}
		out := map[int32]int64{}
		for _, m := range p.Moves() {
			for _, b := range m.Adding {
				in2[b] += m.Bytes / int64(len(m.Adding))
			}
			if len(m.OldReplicas) > 0 {
				out[m.OldReplicas[0]] += m.Bytes
			}
		}
		var busiest int64
		for _, v := range in2 {
			busiest = max(busiest, v)
		}
		for _, v := range out {
			busiest = max(busiest, v)
		}
		bound := time.Duration(float64(busiest) / float64(in.Throttle) * float64(time.Second))
		// The planner runs the groups in turn where the continuous
		// schedule would copy more than 5% longer, so the plan as run
		// never does.
		if e.Copying > g.Copying+tol {
			over++
			t.Logf("seed %d (%s): copying %s, over the groups' %s", seed, rc.kind, e.Copying, g.Copying)
			if e.Copying > g.Copying*105/100+tol {
				t.Errorf("seed %d (%s, groups in turn %t): copying %s, more than 5%% over the groups' %s", seed, rc.kind, p.GroupsInTurn, e.Copying, g.Copying)
			}
		}
		if p.GroupsInTurn {
			inTurn++
			q := *p
			q.GroupsInTurn = false
			if c := engine.EstimateContinuous(&q, nil, nil, rc.o.MaxMovesPerBroker, in); c.Copying*95 <= g.Copying*100 {
				t.Errorf("seed %d (%s): the groups run in turn, but the continuous schedule copies in %s, not 5%% over their %s", seed, rc.kind, c.Copying, g.Copying)
			}
		}
		if e.Copying < bound-tol {
			t.Errorf("seed %d (%s): continuous copying %s, under the busiest broker's %s", seed, rc.kind, e.Copying, bound)
		}
		if e.Groups != len(p.Groups) || e.Bytes != p.TotalBytes || e.Total() != e.Adding+e.Copying+e.CatchingUp+e.Settling+e.Finishing+e.Removing {
			t.Errorf("seed %d: groups %d of %d, bytes %d of %d, total %s", seed, e.Groups, len(p.Groups), e.Bytes, p.TotalBytes, e.Total())
		}
		if again := engine.EstimateContinuous(p, nil, nil, rc.o.MaxMovesPerBroker, in); !reflect.DeepEqual(again, e) {
			t.Fatalf("seed %d: two estimates of one plan: %+v, then %+v", seed, e, again)
		}
		plans++
		sumCont += e.Copying
		sumGroups += g.Copying
		sumBound += bound
	})
	if plans == 0 {
		t.Fatal("no plan")
	}
	if inTurn*20 > plans {
		t.Errorf("%d of %d plans run their groups in turn: more than 5%%", inTurn, plans)
	}
	if sumCont > sumGroups {
		t.Errorf("the plans copy longer than their groups in turn would, over all plans: %s, %s", sumCont, sumGroups)
	}
	t.Logf("%d plans (%d longer than in groups, %d run in turn): copying %s as planned, %s in groups, %s the busiest broker's bound (sums); %.0f%% of the groups'",
		plans, over, inTurn, sumCont.Round(time.Second), sumGroups.Round(time.Second), sumBound.Round(time.Second), 100*sumCont.Seconds()/math.Max(sumGroups.Seconds(), 1e-9))
}

// A long plan: more than 2,000 polls would be needed, so the simulation
// polls less often, every (the groups' estimate)/2,000, here about 40s.
// The copy stays exact; the polls that see each move done cost up to one
// such interval each.
func TestEstimateContinuousLongPlan(t *testing.T) {
	// Two 40,000s copies onto one broker, one after the other.
	p := handPlan(
		[]engine.Move{copyMove(0, 10, 20, 40000*contMiB)},
		[]engine.Move{copyMove(1, 11, 20, 40000*contMiB)},
	)
	in := engine.ETAInputs{Throttle: contMiB}
	e := engine.EstimateContinuous(p, nil, nil, 0, in)
	if !near(e.Copying, 80000*time.Second, time.Millisecond) {
		t.Fatalf("copying %s, want 80000s", e.Copying)
	}
	g := engine.EstimateGroups(p.Groups, in)
	poll := (g.Copying + g.CatchingUp + g.Settling) / 2000
	least := 2 * (engine.GroupSettleTime + engine.MoveSettleTime)
	if e.Settling < least || e.Settling > least+2*poll {
		t.Fatalf("settling %s, want between %s and %s (two polls of %s)", e.Settling, least, least+2*poll, poll)
	}
	t.Logf("%s (polls every %s)", e, poll)
}

// BenchmarkEstimateContinuous estimates 3,000 moves of up to 6 MiB from 6
// brokers onto 4, two moves per broker at a time: a release (and a call to
// Schedule.Ready) per move finished, in each of the three runs. In groups as
// the planner makes them (at most two moves per broker each: 375 groups)
// Ready sees the next groups only; in three groups of 1,000 moves, which
// the planner never makes, it sees a whole group at every call.
func BenchmarkEstimateContinuous(b *testing.B) {
	var ms []engine.Move
	for i := range int32(3000) {
		ms = append(ms, copyMove(i, 1+(i/4)%6, 20+i%4, int64(i%7)*contMiB))
	}
	var small [][]engine.Move
	for i := 0; i < len(ms); i += 8 {
		small = append(small, ms[i:i+8])
	}
	in := engine.ETAInputs{Throttle: 8 * contMiB}
	for _, bc := range []struct {
		name string
		p    *engine.Plan
	}{
		{"planner-groups", handPlan(small...)},
		{"three-groups", handPlan(ms[:1000], ms[1000:2000], ms[2000:])},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var e engine.ETA
			for b.Loop() {
				e = engine.EstimateContinuous(bc.p, nil, nil, 2, in)
			}
			b.Logf("%s; groups %s", e, engine.EstimateGroups(bc.p.Groups, in))
		})
	}
}

// A new replica of a partition with segments in remote storage waits
// TieredStartTime before it copies. Moves that start together wait
// together: in both schedules, two groups of tiered moves take two such
// waits more than the same moves of untiered partitions, and a group
// already under way takes none.
func TestETACountsTheTieredStart(t *testing.T) {
	plan := func(remote int64) *engine.Plan {
		var groups [][]engine.Move
		for g := range int32(2) {
			var ms []engine.Move
			for i := range int32(3) {
				m := copyMove(3*g+i, 1, 4+i, 2*contMiB)
				m.RemoteBytes = remote
				ms = append(ms, m)
			}
			groups = append(groups, ms)
		}
		return handPlan(groups...)
	}
	in := engine.ETAInputs{Throttle: 50 * contMiB}
	untiered, tiered := plan(0), plan(40*contMiB)

	g0, g1 := engine.EstimateGroups(untiered.Groups, in), engine.EstimateGroups(tiered.Groups, in)
	if d := g1.Total() - g0.Total(); d != 2*engine.TieredStartTime {
		t.Errorf("groups: tiered %s, untiered %s: want 2 × %s more", g1, g0, engine.TieredStartTime)
	}
	if g1.Copying != g0.Copying || g1.Bytes != g0.Bytes {
		t.Errorf("groups: the wait is not copying: tiered %+v, untiered %+v", g1, g0)
	}
	started := in
	started.CopiedInFirstGroup = contMiB
	if d := engine.EstimateGroups(tiered.Groups, started).Settling - engine.EstimateGroups(untiered.Groups, started).Settling; d != engine.TieredStartTime {
		t.Errorf("groups, the first under way: %s more settling, want one wait of %s", d, engine.TieredStartTime)
	}

	// The continuous schedule, with room for one group's moves at a time
	// on the sender: the second group's moves start as the first's end.
	c0 := engine.EstimateContinuous(untiered, nil, nil, 3, in)
	c1 := engine.EstimateContinuous(tiered, nil, nil, 3, in)
	if d := c1.Total() - c0.Total(); !near(d, 2*engine.TieredStartTime, engine.DefaultPollInterval) {
		t.Errorf("continuous: tiered %s, untiered %s: %s more, want about 2 × %s", c1, c0, d, engine.TieredStartTime)
	}
	if c1.Copying != c0.Copying {
		t.Errorf("continuous: copying %s tiered, %s untiered: the wait is not copying", c1.Copying, c0.Copying)
	}
}
