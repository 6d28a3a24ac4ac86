package engine_test

import (
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

func TestScaleInMovesOnlyLeavingReplicas(t *testing.T) {
	for _, sizes := range []struct {
		name string
		f    sizeFunc
	}{{"uniform", uniformSizes(1 << 30)}, {"zipf", zipfSizes(1.3, 2000)}} {
		t.Run(sizes.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(9))
			const capacity = 4 << 40
			brokers := brokersWithRacks(1, rackList(15, "a", "b", "c"), capacity)
			c := balancedStart(t, brokers, spreadAssignment(brokers, topicNames(10), 300, 3, sizes.f, r))
			leaving := []int32{13, 14, 15} // one per rack
			ch := engine.Change{RemoveBrokers: leaving}
			o := engine.DefaultOptions()
			p := mustPlan(t, c, ch, o)

			// The lower bound is every replica on a leaving broker.
			onLeaving := 0
			for _, part := range c.Partitions {
				for _, b := range part.Replicas {
					if slices.Contains(leaving, b) {
						onLeaving++
					}
				}
			}
			if p.ReplicaMoves != onLeaving || p.Score.LowerBound != onLeaving {
				t.Fatalf("moves %d, bound %d; replicas on leaving brokers %d", p.ReplicaMoves, p.Score.LowerBound, onLeaving)
			}
			p.Moves().Each(func(m engine.Move) {
				for _, b := range m.Removing {
					if !slices.Contains(leaving, b) {
						t.Fatalf("%s p%d: removes a replica from broker %d, which stays", m.Topic, m.Partition, b)
					}
				}
				for _, b := range m.Adding {
					if slices.Contains(leaving, b) {
						t.Fatalf("%s p%d: adds to leaving broker %d", m.Topic, m.Partition, b)
					}
				}
			})
			reps, leads := brokerCounts(p.Target)
			stay := ids(brokers[:12])
			for _, id := range leaving {
				if reps[id] != 0 {
					t.Fatalf("leaving broker %d still holds %d replicas", id, reps[id])
				}
			}
			// 9000 replicas over 12 brokers in 3 even racks: 750 each.
			if lo, hi := spreadOf(reps, stay); lo != 750 || hi != 750 {
				t.Fatalf("replicas per broker %d..%d, want 750", lo, hi)
			}
			if lo, hi := spreadOf(leads, stay); hi-lo > 1 {
				t.Fatalf("leaders per broker %d..%d", lo, hi)
			}
			receiving := map[int32]bool{}
			for _, id := range stay {
				receiving[id] = true
			}
			if probs := spreadProblems(brokers, receiving, p.Target, o.Awareness); len(probs) > 0 {
				t.Fatalf("spread: %v", probs[:min(5, len(probs))])
			}
			peak := simulate(t, c, ch, o, p)
			for _, bp := range p.Brokers {
				if bp.PeakDiskBytes != peak[bp.Broker] {
					t.Fatalf("broker %d: plan says peak %d, simulation %d", bp.Broker, bp.PeakDiskBytes, peak[bp.Broker])
				}
			}
			t.Logf("moves %d = bound; byte skew %.2f%% (limit %g%%, largest partition %.2f%%)", p.ReplicaMoves,
				p.Score.ByteSkewPercent, o.MaxDiskSkewPercent, p.Score.LargestPartitionPercent)
		})
	}
}

func TestScaleInRefusedBelowReplicationFactor(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(4, "a", "b"), 0)
	parts := spreadAssignment(brokers, []string{"orders"}, 8, 3, uniformSizes(1), rand.New(rand.NewSource(1)))
	parts = append(parts, spreadAssignment(brokers, []string{"audit"}, 4, 2, uniformSizes(1), rand.New(rand.NewSource(1)))...)
	_, err := engine.PlanReassignment(engine.Cluster{Brokers: brokers, Partitions: parts},
		engine.Change{RemoveBrokers: []int32{3, 4}}, engine.DefaultOptions())
	var inf *engine.InfeasibleError
	if !errors.As(err, &inf) {
		t.Fatalf("want *InfeasibleError, got %v", err)
	}
	if inf.Constraint != engine.ConstraintBrokerCount || inf.Subject != "topic orders" || inf.Need != 3 || inf.Limit != 2 || inf.Over() != 1 {
		t.Fatalf("error %+v", inf)
	}
	for _, want := range []string{"broker count", "topic orders", "needs 3 brokers", "limit is 2", "over by 1", "[3 4]"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %q", err, want)
		}
	}
}

func TestScaleInRefusedWhenDataDoesNotFit(t *testing.T) {
	// 12 partitions of 100 bytes at RF 2 are 2400 bytes over four brokers.
	// With 20% kept free, a broker of 1000 bytes holds 800, so three of them
	// hold exactly 2400; brokers of 999 bytes hold 799 each, 2397 in all.
	cluster := func(capacity int64) engine.Cluster {
		brokers := brokersWithRacks(1, rackList(4, ""), capacity)
		var parts []engine.Partition
		for p := range 12 {
			parts = append(parts, engine.Partition{Topic: "t", Partition: int32(p),
				Replicas: []int32{int32(p%4 + 1), int32((p+1)%4 + 1)}, SizeBytes: 100})
		}
		return engine.Cluster{Brokers: brokers, Partitions: parts}
	}
	ch := engine.Change{RemoveBrokers: []int32{4}}
	o := engine.DefaultOptions()
	c := cluster(1000)
	p := mustPlan(t, c, ch, o)
	simulate(t, c, ch, o, p)
	for _, bp := range p.Brokers[:3] {
		if bp.DiskAfter != 800 || bp.PeakDiskBytes != 800 {
			t.Fatalf("broker %d ends at %d bytes, peak %d; want exactly 800", bp.Broker, bp.DiskAfter, bp.PeakDiskBytes)
		}
	}

	_, err := engine.PlanReassignment(cluster(999), ch, o)
	var inf *engine.InfeasibleError
	if !errors.As(err, &inf) {
		t.Fatalf("want *InfeasibleError, got %v", err)
	}
	if inf.Constraint != engine.ConstraintDiskCapacity || inf.Need != 2400 || inf.Limit != 2397 || inf.Over() != 3 {
		t.Fatalf("error %+v", inf)
	}
	for _, want := range []string{"disk capacity", "remaining brokers", "over by 3 bytes", "min_free_disk_percent 20"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %q", err, want)
		}
	}
}

// A dead broker being removed still has its replicas moved, and their bytes
// counted; they are copied from the partitions' live replicas.
func TestScaleInOfDeadBroker(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(4, ""), 0)
	brokers[3].Alive = false
	var parts []engine.Partition
	for p := range 8 {
		parts = append(parts, engine.Partition{Topic: "t", Partition: int32(p),
			Replicas: []int32{int32(p%4 + 1), int32((p+1)%4 + 1)}, SizeBytes: 50})
	}
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	ch := engine.Change{RemoveBrokers: []int32{4}}
	p := mustPlan(t, c, ch, engine.DefaultOptions())
	if p.ReplicaMoves != 4 || p.TotalBytes != 200 {
		t.Fatalf("moves %d bytes %d, want 4 and 200", p.ReplicaMoves, p.TotalBytes)
	}
	p.Moves().Each(func(m engine.Move) {
		if m.Removing[0] != 4 {
			t.Fatalf("move %+v does not drain broker 4", m)
		}
	})
	simulate(t, c, ch, engine.DefaultOptions(), p)

	// Every replica of a partition on dead brokers leaves nothing to copy from.
	brokers[2].Alive = false
	_, err := engine.PlanReassignment(engine.Cluster{Brokers: brokers, Partitions: parts}, ch, engine.DefaultOptions())
	var inf *engine.InfeasibleError
	if !errors.As(err, &inf) || inf.Constraint != engine.ConstraintOnlineReplica || inf.Subject != "t p2" {
		t.Fatalf("want online replica error on t p2, got %v", err)
	}
}
