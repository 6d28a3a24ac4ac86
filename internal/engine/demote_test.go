package engine_test

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// With a demoted broker, every plan (scale-out, scale-in, RF change,
// rebalance) leaves it the preferred leader only of partitions whose other
// receiving replicas are all demoted too (or that it alone holds), and
// moves exactly what the same plan without the demotion moves: demotion
// reorders, it never copies.
func TestDemotedBrokersLeadOnlyWhatTheyMust(t *testing.T) {
	checked := 0
	for seed := range int64(1000) {
		rc := newRandomCase(seed)
		plain, err := engine.PlanReassignment(rc.c, rc.ch, rc.o)
		if err != nil {
			continue
		}
		r := rand.New(rand.NewSource(seed))
		var candidates []int32
		for _, b := range rc.c.Brokers {
			if b.Alive && !slices.Contains(rc.ch.RemoveBrokers, b.ID) {
				candidates = append(candidates, b.ID)
			}
		}
		if len(candidates) < 2 {
			continue
		}
		demoted := []int32{candidates[r.Intn(len(candidates))]}
		o := rc.o
		o.DemotedBrokers = demoted
		p, err := engine.PlanReassignment(rc.c, rc.ch, o)
		if err != nil {
			t.Fatalf("seed %d (%s): plain plan fine, demoting %v fails: %v", seed, rc.kind, demoted, err)
		}
		checked++
		if p.ReplicaMoves != plain.ReplicaMoves || p.TotalBytes != plain.TotalBytes {
			t.Errorf("seed %d (%s): demoting %v changes the moves: %d moves, %d bytes; without it %d, %d",
				seed, rc.kind, demoted, p.ReplicaMoves, p.TotalBytes, plain.ReplicaMoves, plain.TotalBytes)
		}
		receiving := map[int32]bool{}
		for _, b := range p.Brokers {
			receiving[b.Broker] = b.Alive && !b.Removed
		}
		for _, b := range rc.ch.AddBrokers {
			receiving[b.ID] = true
		}
		for _, part := range p.Target {
			if len(part.Replicas) == 0 || !slices.Contains(demoted, part.Replicas[0]) {
				continue
			}
			for _, b := range part.Replicas[1:] {
				if receiving[b] && !slices.Contains(demoted, b) {
					t.Errorf("seed %d (%s): demoted broker %d leads %s p%d (replicas %v), which broker %d could lead",
						seed, rc.kind, part.Replicas[0], part.Topic, part.Partition, part.Replicas, b)
					break
				}
			}
		}
	}
	if checked < 500 {
		t.Fatalf("only %d random plans checked; want at least 500", checked)
	}
}

// PlanLeaders moves no data: every partition keeps its members, and only
// the order changes. On a cluster whose leaders all sit on broker 1 it
// balances them; demoting broker 2 then leaves it none.
func TestPlanLeadersReordersOnly(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(3, "a", "b", "c"), 0)
	var parts []engine.Partition
	for p := range int32(12) {
		parts = append(parts, engine.Partition{Topic: "t", Partition: p, Replicas: []int32{1, 2 + p%2, 3 - p%2}, SizeBytes: 1 << 20})
	}
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	for _, demoted := range [][]int32{nil, {2}} {
		o := engine.DefaultOptions()
		o.DemotedBrokers = demoted
		reasons, err := engine.LeadersOutOfBalance(c, o)
		if err != nil || len(reasons) == 0 {
			t.Fatalf("demoting %v: LeadersOutOfBalance = %v, %v; want a reason (broker 1 leads all 12)", demoted, reasons, err)
		}
		p, err := engine.PlanLeaders(c, o)
		if err != nil {
			t.Fatal(err)
		}
		if p.ReplicaMoves != 0 || p.TotalBytes != 0 || len(p.Moves()) != 0 {
			t.Errorf("demoting %v: PlanLeaders moves %d replicas, %d bytes; want none", demoted, p.ReplicaMoves, p.TotalBytes)
		}
		for i, part := range p.Target {
			if !engine.SameMembers(part.Replicas, parts[i].Replicas) {
				t.Errorf("demoting %v: %s p%d goes to %v from %v", demoted, part.Topic, part.Partition, part.Replicas, parts[i].Replicas)
			}
		}
		_, leaders := brokerCounts(p.Target)
		want := map[int32]int{1: 4, 2: 4, 3: 4}
		if demoted != nil {
			want = map[int32]int{1: 6, 2: 0, 3: 6}
		}
		for b, n := range want {
			if leaders[b] != n {
				t.Errorf("demoting %v: broker %d leads %d partitions; want %d (all: %v)", demoted, b, leaders[b], n, leaders)
			}
		}
		after := c
		after.Partitions = p.Target
		if reasons, err := engine.LeadersOutOfBalance(after, o); err != nil || len(reasons) > 0 {
			t.Errorf("demoting %v: after PlanLeaders the leaders are still out of balance: %v, %v", demoted, reasons, err)
		}
	}
}

// HeavyLeaders names a broker leading more than 1.25× the mean of the
// brokers that stay and are not demoted, and no other.
func TestHeavyLeaders(t *testing.T) {
	p := &engine.Plan{Brokers: []engine.BrokerProjection{
		{Broker: 1, Rack: "a", Alive: true, After: engine.Load{Leaders: 13}},
		{Broker: 2, Rack: "b", Alive: true, After: engine.Load{Leaders: 9}},
		{Broker: 3, Rack: "c", Alive: true, After: engine.Load{Leaders: 8}},
		{Broker: 4, Rack: "c", Alive: true, Removed: true},
		{Broker: 5, Rack: "a", Alive: true, After: engine.Load{Leaders: 0}},
	}}
	// Mean over 1, 2, 3 (5 is demoted, 4 leaves): 10; 13 > 12.5.
	got := engine.HeavyLeaders(p, []int32{5})
	if len(got) != 1 || got[0] != `broker 1 (rack "a") leads 13, 1.30× the mean of 10.0` {
		t.Errorf("HeavyLeaders = %q; want broker 1 alone", got)
	}
	// Counted with broker 5, the mean is 7.5: broker 1 is further above
	// it, and broker 2 (9, under 9.375) is still not heavy.
	if got := engine.HeavyLeaders(p, nil); len(got) != 1 || got[0] != `broker 1 (rack "a") leads 13, 1.73× the mean of 7.5` {
		t.Errorf("HeavyLeaders without demotion = %q; want broker 1 alone at 1.73×", got)
	}
}
