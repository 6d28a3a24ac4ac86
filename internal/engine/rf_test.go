package engine_test

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

func TestReplicationFactorIncrease(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(6, "a", "b", "c"), 1<<40)
	parts := spreadAssignment(brokers, []string{"orders"}, 30, 2, zipfSizes(1.3, 500), rand.New(rand.NewSource(2)))
	parts = append(parts, spreadAssignment(brokers, []string{"audit"}, 6, 3, uniformSizes(1<<20), rand.New(rand.NewSource(3)))...)
	c := balancedStart(t, brokers, parts)
	ch := engine.Change{ReplicationFactor: map[string]int{"orders": 3}}
	o := engine.DefaultOptions()
	p := mustPlan(t, c, ch, o)

	// One new replica per partition of orders, each a copy; nothing else moves
	// because 108 replicas over 6 brokers is 18 each, and each rack must now
	// hold one replica of every partition: the new replica goes to the rack
	// the partition lacks.
	if p.ReplicaMoves != 30 || p.Score.LowerBound != 30 {
		t.Fatalf("moves %d, bound %d; want 30", p.ReplicaMoves, p.Score.LowerBound)
	}
	p.Moves().Each(func(m engine.Move) {
		if m.Topic != "orders" || len(m.Adding) != 1 || len(m.Removing) != 0 || len(m.NewReplicas) != 3 {
			t.Fatalf("move %+v is not one added replica of orders", m)
		}
	})
	reps, leads := brokerCounts(p.Target)
	for _, id := range ids(brokers) {
		if reps[id] != 18 || leads[id] != 6 {
			t.Fatalf("broker %d: %d replicas, %d leaders; want 18 and 6", id, reps[id], leads[id])
		}
	}
	if probs := spreadProblems(brokers, receivingAll(brokers), p.Target, o.Awareness); len(probs) > 0 {
		t.Fatalf("spread: %v", probs)
	}
	simulate(t, c, ch, o, p)
}

func TestReplicationFactorDecrease(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(6, "a", "b", "c"), 1<<40)
	parts := spreadAssignment(brokers, []string{"orders"}, 30, 3, uniformSizes(1<<20), rand.New(rand.NewSource(2)))
	c := balancedStart(t, brokers, parts)
	ch := engine.Change{ReplicationFactor: map[string]int{"orders": 2}}
	o := engine.DefaultOptions()
	p := mustPlan(t, c, ch, o)

	// Dropping a replica copies nothing: 30 drop-only moves, and the
	// remaining 60 replicas end 10 per broker.
	if p.ReplicaMoves != 0 || p.TotalBytes != 0 || len(p.Moves()) != 30 {
		t.Fatalf("copies %d, bytes %d, moves %d; want 0, 0 and 30 drops", p.ReplicaMoves, p.TotalBytes, len(p.Moves()))
	}
	p.Moves().Each(func(m engine.Move) {
		if len(m.Adding) != 0 || len(m.Removing) != 1 || m.Bytes != 0 {
			t.Fatalf("move %+v is not a single drop", m)
		}
	})
	reps, leads := brokerCounts(p.Target)
	for _, id := range ids(brokers) {
		if reps[id] != 10 || leads[id] != 5 {
			t.Fatalf("broker %d: %d replicas, %d leaders; want 10 and 5", id, reps[id], leads[id])
		}
	}
	if probs := spreadProblems(brokers, receivingAll(brokers), p.Target, o.Awareness); len(probs) > 0 {
		t.Fatalf("spread: %v", probs)
	}
	simulate(t, c, ch, o, p)
}

// Raising the replication factor by two moves one replica at a time: an RF 1
// partition goes to RF 3 in two moves, in two groups.
func TestReplicationFactorIncreaseOneReplicaInFlight(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(3, "a", "b", "c"), 0)
	parts := []engine.Partition{{Topic: "t", Partition: 0, Replicas: []int32{1}, SizeBytes: 100}}
	ch := engine.Change{ReplicationFactor: map[string]int{"t": 3}}
	p := mustPlan(t, engine.Cluster{Brokers: brokers, Partitions: parts}, ch, engine.DefaultOptions())
	if len(p.Groups) != 2 || p.ReplicaMoves != 2 || p.TotalBytes != 200 {
		t.Fatalf("%d groups, %d copies, %d bytes; want 2, 2, 200", len(p.Groups), p.ReplicaMoves, p.TotalBytes)
	}
	ms := p.Moves()
	if len(ms[0].OldReplicas) != 1 || len(ms[0].NewReplicas) != 2 || len(ms[1].NewReplicas) != 3 {
		t.Fatalf("moves %+v do not add one replica each", ms)
	}

	// With two replicas allowed in flight, one move does it.
	o := engine.DefaultOptions()
	o.MaxReplicaMovesPerPartition = 2
	p = mustPlan(t, engine.Cluster{Brokers: brokers, Partitions: parts}, ch, o)
	if len(p.Groups) != 1 || len(p.Moves()) != 1 || len(p.Moves()[0].Adding) != 2 {
		t.Fatalf("with 2 in flight: %d groups, moves %+v", len(p.Groups), p.Moves())
	}
}

// A partition's intermediate replica lists leave a removed broker out
// whenever the change can: Kafka refuses a target that lists a cordoned
// broker, and a leaving broker is cordoned for its whole drain. Soak seed
// 10: a replication factor decrease around a drained broker 2 with a new,
// empty broker 5 planned [3 1 2] -> [1 2] -> [5 1], and Kafka refused the
// first step. Dropping 2 first gives [3 1] -> [5 1].
func TestIntermediateListsLeaveRemovedBrokersOut(t *testing.T) {
	for seed := int64(0); seed < 20; seed++ {
		brokers := brokersWithRacks(1, []string{"a", "b", "c", "a", "b"}, 1<<40)
		parts := spreadAssignment(brokers[:4], []string{"plain"}, 6, 3, uniformSizes(2<<20), rand.New(rand.NewSource(seed)))
		c := engine.Cluster{Brokers: brokers, Partitions: parts}
		ch := engine.Change{ReplicationFactor: map[string]int{"plain": 2}, RemoveBrokers: []int32{2}}
		p := mustPlan(t, c, ch, engine.DefaultOptions())
		p.Moves().Each(func(m engine.Move) {
			if slices.Contains(m.NewReplicas, 2) {
				t.Errorf("seed %d: move %s p%d %v -> %v keeps the removed broker 2", seed, m.Topic, m.Partition, m.OldReplicas, m.NewReplicas)
			}
		})
	}
}
