package engine_test

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// TestPropertyContinuousSchedule runs the plans of the random clusters of
// TestPropertyRandomClusters under the continuous schedule, with moves
// finishing in a random order, and checks at every instant what the groups
// guarantee between them: no broker over its disk limit with every copy in
// flight counted and removed replicas freed only when their move is done,
// no broker touched by more than max_moves_per_broker moves in flight, each
// partition's moves in their order, and no stall before the last move.
func TestPropertyContinuousSchedule(t *testing.T) {
	const seeds = 400
	var runs, starts, overlapped, inTurn int
	eachRandomPlan(t, seeds, func(seed int64, rc randomCase, p *engine.Plan) {
		// Three completion orders per plan.
		for run := range int64(3) {
			t.Run(fmt.Sprintf("seed%d-%s-run%d", seed, rc.kind, run), func(t *testing.T) {
				s, o := runContinuous(t, rc, p, rand.New(rand.NewSource(seed*3+run)))
				starts += s
				if o {
					overlapped++
				}
			})
			runs++
		}
		// The same plan with its groups in turn, as the planner runs it
		// where that is faster: the disk bound holds the same, and no move
		// of a group starts before the one before is done.
		t.Run(fmt.Sprintf("seed%d-%s-in-turn", seed, rc.kind), func(t *testing.T) {
			q := *p
			q.GroupsInTurn = true
			runContinuous(t, rc, &q, rand.New(rand.NewSource(seed)))
		})
		if p.GroupsInTurn {
			inTurn++
		}
	})
	t.Logf("%d runs, %d moves started; in %d runs moves of two groups were in flight at once; %d plans run their groups in turn", runs, starts, overlapped, inTurn)
	if overlapped == 0 {
		t.Fatal("no run ever overlapped two groups: the schedule is the groups again")
	}
}

// runContinuous dispatches p's moves with Schedule.Ready, starting a random
// share of what is ready and finishing a random move in flight, until
// every move is done. It returns how many moves it started and whether two
// groups ever had moves in flight together.
func runContinuous(t *testing.T, rc randomCase, p *engine.Plan, r *rand.Rand) (int, bool) {
	t.Helper()
	dm := newDiskModel(rc.c, rc.ch, rc.o)
	usage, lists, sizes, copies, limit, key := dm.usage, dm.lists, dm.sizes, dm.copies, dm.limit, partKey
	perBroker := rc.o.MaxMovesPerBroker
	if perBroker == 0 {
		perBroker = engine.DefaultMaxMovesPerBroker
	}

	moves := p.Moves()
	groupOf := make([]int, 0, len(moves))
	p.EachMove(func(g, _ int, _ engine.Move) { groupOf = append(groupOf, g) })
	states := make([]engine.MoveState, len(moves))
	var inFlight []int
	incoming := map[int32]int64{}
	touches := map[int32]int{}
	started, done := 0, 0
	overlapped := false
	for done < len(moves) {
		ready := p.Schedule().Ready(states, rc.o.MaxMovesPerBroker)
		if len(ready) == 0 && len(inFlight) == 0 {
			t.Fatalf("stalled with %d of %d moves done and none in flight", done, len(moves))
		}
		// Start a random prefix of what is ready (Ready's order is its
		// priority), sometimes nothing, to vary the interleaving.
		n := len(ready)
		if n > 0 && r.Intn(3) == 0 {
			n = r.Intn(n + 1)
		}
		if len(inFlight) == 0 && n == 0 {
			n = len(ready)
		}
		for _, k := range ready[:n] {
			m := moves[k]
			pk := key(m.Topic, m.Partition)
			if !slices.Equal(lists[pk], m.OldReplicas) {
				t.Fatalf("move %d (%s, group %d) starts from %v, but the partition is at %v", k, pk, groupOf[k], m.OldReplicas, lists[pk])
			}
			states[k] = engine.MoveInFlight
			inFlight = append(inFlight, k)
			started++
			for _, b := range m.Adding {
				incoming[b] += copies[pk]
			}
			for _, b := range append(slices.Clone(m.Adding), m.Removing...) {
				if touches[b]++; touches[b] > perBroker {
					t.Fatalf("broker %d has %d moves in flight (max %d)", b, touches[b], perBroker)
				}
			}
		}
		groups := map[int]bool{}
		for _, k := range inFlight {
			groups[groupOf[k]] = true
		}
		overlapped = overlapped || len(groups) > 1
		if p.GroupsInTurn && len(groups) > 1 {
			t.Fatalf("the groups run in turn, yet moves of %d groups are in flight together", len(groups))
		}
		for b, in := range incoming {
			if l, ok := limit(b); ok && usage[b]+in > l {
				t.Fatalf("broker %d would hold %d bytes (%d held, %d arriving) with the moves in flight, limit %d",
					b, usage[b]+in, usage[b], in, l)
			}
		}
		if len(inFlight) == 0 {
			continue
		}
		// A random move in flight finishes.
		j := r.Intn(len(inFlight))
		k := inFlight[j]
		inFlight = slices.Delete(inFlight, j, j+1)
		m := moves[k]
		pk := key(m.Topic, m.Partition)
		for _, b := range m.Adding {
			incoming[b] -= copies[pk]
			usage[b] += copies[pk]
		}
		for _, b := range m.Removing {
			usage[b] -= sizes[pk]
		}
		for _, b := range append(slices.Clone(m.Adding), m.Removing...) {
			touches[b]--
		}
		lists[pk] = slices.Clone(m.NewReplicas)
		states[k] = engine.MoveDone
		done++
	}
	return started, overlapped
}

// TestReadyKeepsRoomForEarlierGroups: a move of a later group starts onto
// a broker only while every earlier move onto it still fits with no
// removal finishing, and starts then even though an earlier group is not
// done with that broker.
func TestReadyKeepsRoomForEarlierGroups(t *testing.T) {
	move := func(topic string, size int64, from, to int32) engine.Move {
		return engine.Move{Topic: topic, OldReplicas: []int32{from}, NewReplicas: []int32{to},
			Adding: []int32{to}, Removing: []int32{from}, Bytes: size}
	}
	plan := func(later int64) *engine.Plan {
		return &engine.Plan{
			Groups: []engine.Group{
				// x holds broker 2's only slot, so a waits.
				{Steps: []engine.Step{{Moves: []engine.Move{move("a", 30, 2, 1), move("x", 1, 2, 3)}}}},
				{Steps: []engine.Step{{Moves: []engine.Move{move("b", later, 4, 1), move("c", 50, 4, 5)}}}},
			},
			Brokers: []engine.BrokerProjection{
				{Broker: 1, DiskBefore: 40, LimitBytes: 100},
				{Broker: 2, DiskBefore: 31},
				{Broker: 3},
				{Broker: 4, DiskBefore: 200},
				{Broker: 5}, // capacity unknown: no limit
			},
		}
	}
	// a, x, b, c; x in flight.
	states := []engine.MoveState{engine.MovePending, engine.MoveInFlight, engine.MovePending, engine.MovePending}
	for _, tc := range []struct {
		later int64
		want  []int
	}{
		// 40 held + 30 for a + 30 for b = 100: b fits beside a.
		{30, []int{2}},
		// 40 + 30 + 31 = 101: b would leave a no room.
		{31, []int{3}},
	} {
		p := plan(tc.later)
		if got := p.Schedule().Ready(states, 1); !slices.Equal(got, tc.want) {
			t.Errorf("b of %d bytes: Ready = %v, want %v", tc.later, got, tc.want)
		}
	}
	// Once a is in flight, b of 31 bytes still waits: 40 + 30 + 31 > 100.
	p := plan(31)
	inFlight := []engine.MoveState{engine.MoveInFlight, engine.MoveDone, engine.MovePending, engine.MovePending}
	if got := p.Schedule().Ready(inFlight, 2); !slices.Equal(got, []int{3}) {
		t.Errorf("a in flight: Ready = %v, want [3]", got)
	}
	// Once a is done and broker 1 freed nothing, b still does not fit:
	// 70 + 31 > 100.
	done := []engine.MoveState{engine.MoveDone, engine.MoveDone, engine.MovePending, engine.MovePending}
	if got := p.Schedule().Ready(done, 2); !slices.Equal(got, []int{3}) {
		t.Errorf("a done: Ready = %v, want [3]", got)
	}
}

// When a broker's slots let only one of a group's moves start, Ready
// starts the one whose sender copies nothing yet: a sender's throttle is
// shared by everything it sends, and the other sender would idle.
func TestReadyStartsTheMoveWhoseSenderIsIdle(t *testing.T) {
	const size = 10 << 20
	move := func(p int32, leader, from, to int32) engine.Move {
		return engine.Move{Topic: "t", Partition: p, OldReplicas: []int32{leader, from}, NewReplicas: []int32{leader, to},
			Adding: []int32{to}, Removing: []int32{from}, Bytes: size}
	}
	p := handPlan(
		[]engine.Move{move(0, 1, 20, 10)},
		// In plan order the first copies from broker 1, already busy
		// with the move above; both go to broker 11, which takes one.
		[]engine.Move{move(1, 1, 21, 11), move(2, 2, 22, 11)},
	)
	states := []engine.MoveState{engine.MoveInFlight, engine.MovePending, engine.MovePending}
	if got := p.Schedule().Ready(states, 1); !slices.Equal(got, []int{2}) {
		t.Fatalf("Ready = %v, want [2]: the move from broker 2, which sends nothing yet", got)
	}
	// With broker 1 idle again, plan order decides.
	states[0] = engine.MoveDone
	if got := p.Schedule().Ready(states, 1); !slices.Equal(got, []int{1}) {
		t.Fatalf("with nothing in flight Ready = %v, want [1]", got)
	}
}

// Next is what Ready starts once the moves it returned free their slots:
// one more move per slot, never a partition's later move while its earlier
// one has not finished.
func TestNextIsWhatStartsWhenASlotFrees(t *testing.T) {
	const size = 10 << 20
	move := func(p int32, from, to int32) engine.Move {
		return engine.Move{Topic: "t", Partition: p, OldReplicas: []int32{from}, NewReplicas: []int32{to},
			Adding: []int32{to}, Removing: []int32{from}, Bytes: size}
	}
	p := handPlan(
		// Partitions 0, 1 and 2 go to broker 11, which takes one at a time.
		[]engine.Move{move(0, 1, 11), move(1, 2, 11), move(2, 3, 11)},
		// Partition 0 moves on once its first move is done.
		[]engine.Move{move(0, 11, 12)},
	)
	s := p.Schedule()
	states := make([]engine.MoveState, 4)
	ready := s.Ready(states, 1)
	if !slices.Equal(ready, []int{0}) {
		t.Fatalf("Ready = %v, want [0]", ready)
	}
	if got := s.Next(states, ready, 1); !slices.Equal(got, []int{1}) {
		t.Fatalf("Next = %v, want [1]: one more slot on broker 11, and partition 0's second move waits for its first", got)
	}
	// What Next named is what Ready starts once the slot frees.
	states[0] = engine.MoveDone
	if got := s.Ready(states, 1); !slices.Equal(got, []int{1}) {
		t.Fatalf("after move 0: Ready = %v, want [1]", got)
	}
}
