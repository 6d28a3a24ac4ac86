package engine_test

import (
	"math/rand"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

func receivingAll(bs []engine.Broker) map[int32]bool {
	out := map[int32]bool{}
	for _, b := range bs {
		out[b.ID] = b.Alive
	}
	return out
}

// A cluster placed with no regard for racks is spread by the plan, with one
// move per missing rack and no more than balance needs.
func TestRackSpreadIsRestored(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(6, "a", "b", "c"), 0)
	// Every partition on brokers 1 and 4 (rack a) and 2 (rack b).
	var parts []engine.Partition
	for p := range 30 {
		parts = append(parts, engine.Partition{Topic: "t", Partition: int32(p), Replicas: []int32{1, 4, 2}, SizeBytes: 10})
	}
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	o := engine.DefaultOptions()
	p := mustPlan(t, c, engine.Change{}, o)
	if probs := spreadProblems(brokers, receivingAll(brokers), p.Target, o.Awareness); len(probs) > 0 {
		t.Fatalf("spread: %v", probs)
	}
	// Rack c holds nothing and must hold 30; racks a and b end with 30
	// each, 15 per broker. Broker 1 and 4 each give up 15, broker 2 gives
	// 15 to broker 5: 30 + 15 = 45 copies, the fewest possible.
	if p.ReplicaMoves != 45 || p.Score.LowerBound != 45 {
		t.Fatalf("moves %d, bound %d, want 45", p.ReplicaMoves, p.Score.LowerBound)
	}
	reps, _ := brokerCounts(p.Target)
	for _, id := range ids(brokers) {
		if reps[id] != 15 {
			t.Fatalf("broker %d holds %d, want 15: %v", id, reps[id], reps)
		}
	}
	simulate(t, c, engine.Change{}, o, p)
}

// With zone/rack awareness, zones are spread first, then racks.
func TestTwoDimensionsSpreadZonesFirst(t *testing.T) {
	// Zone z1 has racks r1 and r2, zone z2 has racks r3 and r4; two
	// brokers per rack. RF 3: two zones (all there are), three racks.
	racks := []string{"z1/r1", "z1/r1", "z1/r2", "z1/r2", "z2/r3", "z2/r3", "z2/r4", "z2/r4"}
	brokers := brokersWithRacks(1, racks, 0)
	var parts []engine.Partition
	for p := range 40 {
		// Everything in zone z1 to start with.
		parts = append(parts, engine.Partition{Topic: "t", Partition: int32(p), Replicas: []int32{1, 3, 2}, SizeBytes: 10})
	}
	o := engine.DefaultOptions()
	o.Awareness = engine.Awareness{Separator: "/", Dimensions: []string{"zone", "rack"}}
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	p := mustPlan(t, c, engine.Change{}, o)
	if probs := spreadProblems(brokers, receivingAll(brokers), p.Target, o.Awareness); len(probs) > 0 {
		t.Fatalf("spread: %v", probs[:min(5, len(probs))])
	}
	zone := func(id int32) string { return racks[id-1][:2] }
	for _, tp := range p.Target {
		zs := map[string]bool{}
		rs := map[string]bool{}
		for _, b := range tp.Replicas {
			zs[zone(b)] = true
			rs[racks[b-1]] = true
		}
		if len(zs) != 2 || len(rs) != 3 {
			t.Fatalf("%s p%d on %v: %d zones, %d racks; want 2 and 3", tp.Topic, tp.Partition, tp.Replicas, len(zs), len(rs))
		}
	}
	reps, _ := brokerCounts(p.Target)
	// 120 replicas over 8 brokers: 15 each, which the layout allows.
	for _, id := range ids(brokers) {
		if reps[id] != 15 {
			t.Fatalf("broker %d holds %d, want 15: %v", id, reps[id], reps)
		}
	}
	simulate(t, c, engine.Change{}, o, p)

	// Without awareness of zones, reading the whole string as the rack, four
	// racks for RF 3 also means three racks, but zones may be left unused:
	// the dimension order is what makes zones come first.
	o.Awareness = engine.Awareness{}
	p2 := mustPlan(t, c, engine.Change{}, o)
	if probs := spreadProblems(brokers, receivingAll(brokers), p2.Target, o.Awareness); len(probs) > 0 {
		t.Fatalf("rack-only spread: %v", probs[:min(5, len(probs))])
	}
}

// When a dimension runs out of values, it is given up for the next, then for
// the least-loaded broker (KIP-708): zone z1 has one rack with one broker,
// zone z2 one rack with four. RF 3: both zones, both racks, and the third
// replica on the least-loaded broker of z2.
func TestDimensionFallbackToLeastLoaded(t *testing.T) {
	racks := []string{"z1/r1", "z2/r2", "z2/r2", "z2/r2", "z2/r2"}
	brokers := brokersWithRacks(1, racks, 0)
	o := engine.DefaultOptions()
	o.Awareness = engine.Awareness{Separator: "/", Dimensions: []string{"zone", "rack"}}
	placed, err := engine.PlacePartitions(engine.Cluster{Brokers: brokers}, "t", 40, 3, o)
	if err != nil {
		t.Fatal(err)
	}
	reps, _ := brokerCounts(placed)
	// Broker 1 (the only one in z1) is in every partition; the other 80
	// replicas spread evenly over the four z2 brokers.
	if reps[1] != 40 {
		t.Fatalf("broker 1 holds %d, want 40", reps[1])
	}
	for id := int32(2); id <= 5; id++ {
		if reps[id] != 20 {
			t.Fatalf("broker %d holds %d, want 20: %v", id, reps[id], reps)
		}
	}
	// The rebalance planner agrees with the placement: nothing to do, and
	// the bound reported for broker 1 is every partition.
	c := engine.Cluster{Brokers: brokers, Partitions: placed}
	p := mustPlan(t, c, engine.Change{}, o)
	if p.ReplicaMoves != 0 {
		t.Fatalf("rebalancing a placed topic moves %d replicas", p.ReplicaMoves)
	}
	if p.Brokers[0].TargetReplicas != (engine.Range{Min: 40, Max: 40}) {
		t.Fatalf("broker 1 target %+v, want exactly 40", p.Brokers[0].TargetReplicas)
	}
}

// Scale-out into a cluster whose racks are uneven: the count stays at the
// bound and the spread holds.
func TestScaleOutIntoUnevenRacks(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	old := brokersWithRacks(1, []string{"a", "b", "c", "a", "b"}, 0)
	parts := spreadAssignment(old, topicNames(4), 25, 3, uniformSizes(1<<20), r)
	c := engine.Cluster{Brokers: old, Partitions: parts}
	add := brokersWithRacks(6, []string{"c"}, 0)
	ch := engine.Change{AddBrokers: add}
	p := mustPlan(t, c, ch, engine.DefaultOptions())
	// Rack c now has two brokers for 100 partitions: broker 6 takes 50.
	if p.ReplicaMoves != 50 || p.Score.LowerBound != 50 {
		t.Fatalf("moves %d, bound %d, want 50", p.ReplicaMoves, p.Score.LowerBound)
	}
	simulate(t, c, ch, engine.DefaultOptions(), p)
}
