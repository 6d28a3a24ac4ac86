package engine_test

import (
	"errors"
	"fmt"
	"math"
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
	var runs, starts, overlapped int
	for seed := range int64(seeds) {
		rc := newRandomCase(seed)
		p, err := engine.PlanReassignment(rc.c, rc.ch, rc.o)
		if err != nil {
			var in *engine.InputError
			var inf *engine.InfeasibleError
			if !errors.As(err, &in) && !errors.As(err, &inf) {
				t.Fatalf("seed %d: error of unexpected type %T: %v", seed, err, err)
			}
			continue
		}
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
	}
	t.Logf("%d runs, %d moves started; in %d runs moves of two groups were in flight at once", runs, starts, overlapped)
	if overlapped == 0 {
		t.Fatal("no run ever overlapped two groups: the schedule is the groups again")
	}
}

// runContinuous dispatches p's moves with Plan.Ready, starting a random
// share of what is ready and finishing a random move in flight, until
// every move is done. It returns how many moves it started and whether two
// groups ever had moves in flight together.
func runContinuous(t *testing.T, rc randomCase, p *engine.Plan, r *rand.Rand) (int, bool) {
	t.Helper()
	key := func(topic string, part int32) string { return fmt.Sprintf("%s/%d", topic, part) }
	usage := map[int32]int64{}
	capacity := map[int32]int64{}
	for _, b := range append(slices.Clone(rc.c.Brokers), rc.ch.AddBrokers...) {
		usage[b.ID] = b.UsedBytes
		capacity[b.ID] = b.CapacityBytes
	}
	lists := map[string][]int32{}
	sizes := map[string]int64{}
	explained := map[int32]int64{}
	for _, part := range rc.c.Partitions {
		lists[key(part.Topic, part.Partition)] = slices.Clone(part.Replicas)
		sizes[key(part.Topic, part.Partition)] = part.SizeBytes
		for _, b := range part.Replicas {
			explained[b] += part.SizeBytes
		}
	}
	for id := range usage {
		usage[id] = max(usage[id], explained[id])
	}
	limit := func(id int32) (int64, bool) {
		cp := capacity[id]
		if cp == 0 {
			return 0, false
		}
		return cp - int64(math.Ceil(float64(cp)*(rc.o.MinFreeDiskPercent/100))), true
	}
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
		ready := p.Ready(states, rc.o.MaxMovesPerBroker)
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
				incoming[b] += sizes[pk]
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
			incoming[b] -= sizes[pk]
			usage[b] += sizes[pk]
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
