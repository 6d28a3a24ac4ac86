package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// byteSwapCluster needs broker 1 to give its two large partitions to broker
// 2 and take two small ones back. Broker 1 starts at 800 bytes.
func byteSwapCluster(capacity int64) engine.Cluster {
	brokers := brokersWithRacks(1, rackList(4, ""), capacity)
	sizes := map[int32][]int64{1: {200, 200, 200, 200}, 2: {10, 10, 10, 10}, 3: {105, 105, 105, 105}, 4: {105, 105, 105, 105}}
	var parts []engine.Partition
	for b := int32(1); b <= 4; b++ {
		for k, s := range sizes[b] {
			parts = append(parts, engine.Partition{Topic: "t", Partition: int32(len(parts)), Replicas: []int32{b}, SizeBytes: s})
			_ = k
		}
	}
	return engine.Cluster{Brokers: brokers, Partitions: parts}
}

// Both copies of a move stay on disk until its group ends, so a broker that
// gives and receives in the same plan receives only once its own replicas
// are gone, when it has no room for both.
func TestDiskSafetyOrdersGiveBeforeTake(t *testing.T) {
	o := engine.DefaultOptions()
	o.MinFreeDiskPercent = 10
	o.MaxMovesPerBroker = 4

	// Plenty of room: the four moves of the swap run in one group.
	roomy := byteSwapCluster(10_000)
	p := mustPlan(t, roomy, engine.Change{}, o)
	if p.ReplicaMoves != 4 || len(p.Groups) != 1 {
		t.Fatalf("roomy: %d moves in %d groups, want 4 in 1", p.ReplicaMoves, len(p.Groups))
	}
	simulate(t, roomy, engine.Change{}, o, p)

	// 895 bytes with 10% free: a limit of 805. Broker 1 holds 800, so the
	// 10-byte replicas can come only after the 200-byte ones have left.
	tight := byteSwapCluster(895)
	p = mustPlan(t, tight, engine.Change{}, o)
	if p.ReplicaMoves != 4 || len(p.Groups) != 2 {
		t.Fatalf("tight: %d moves in %d groups, want 4 in 2", p.ReplicaMoves, len(p.Groups))
	}
	peak := simulate(t, tight, engine.Change{}, o, p)
	if peak[1] != 800 || p.Brokers[0].PeakDiskBytes != 800 || p.Brokers[0].LimitBytes != 805 {
		t.Fatalf("broker 1 peak %d (plan %d), limit %d; want 800 under 805", peak[1], p.Brokers[0].PeakDiskBytes, p.Brokers[0].LimitBytes)
	}
	for _, m := range p.Groups[0].Moves() {
		if m.Adding[0] == 1 {
			t.Fatalf("group 1 copies %s p%d onto broker 1 while its own replicas are still there", m.Topic, m.Partition)
		}
	}
	// The group boundary peaks are reported per broker.
	for _, bb := range p.Groups[0].Peak {
		if bb.Broker == 2 && bb.Bytes != 40+400 {
			t.Fatalf("group 1 peak on broker 2 is %d, want 440 (both copies)", bb.Bytes)
		}
	}
}

// Brokers 1 and 2 must swap a 120-byte and a 100-byte partition to even out
// bytes. Either copy would take its destination over its limit while the
// destination's own replica is still there, although the end state fits. The
// planner refuses before anything runs, and says where and by how much.
func TestDiskDeadlockIsRefusedUpFront(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(2, ""), 1050)
	brokers[0].UsedBytes, brokers[1].UsedBytes = 1000, 1000
	parts := []engine.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1}, SizeBytes: 120},
		{Topic: "t", Partition: 1, Replicas: []int32{1}, SizeBytes: 120},
		{Topic: "t", Partition: 2, Replicas: []int32{2}, SizeBytes: 100},
		{Topic: "t", Partition: 3, Replicas: []int32{2}, SizeBytes: 100},
	}
	o := engine.DefaultOptions()
	o.MinFreeDiskPercent = 0
	o.MaxDiskSkewPercent = 1
	_, err := engine.PlanReassignment(engine.Cluster{Brokers: brokers, Partitions: parts}, engine.Change{}, o)
	var inf *engine.InfeasibleError
	if !errors.As(err, &inf) {
		t.Fatalf("want *InfeasibleError, got %v", err)
	}
	if inf.Constraint != engine.ConstraintDiskCapacity || inf.Subject != "broker 1" || inf.Need != 1100 || inf.Limit != 1050 || inf.Over() != 50 {
		t.Fatalf("error %+v", inf)
	}
	for _, want := range []string{"group 1", "t p2 (100 bytes)", "over by 50 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %q", err, want)
		}
	}
}

// Spreading needs room too: two partitions sit in one rack each, and every
// broker is full, so neither can take a copy from the other rack.
func TestSpreadWithoutRoomIsRefused(t *testing.T) {
	brokers := brokersWithRacks(1, []string{"a", "a", "b", "b"}, 1000)
	for k := range brokers {
		brokers[k].UsedBytes = 900 // 450 of replicas, 450 of other data
	}
	parts := []engine.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2}, SizeBytes: 450},
		{Topic: "t", Partition: 1, Replicas: []int32{3, 4}, SizeBytes: 450},
	}
	o := engine.DefaultOptions()
	o.MinFreeDiskPercent = 10 // limit 900: full
	_, err := engine.PlanReassignment(engine.Cluster{Brokers: brokers, Partitions: parts}, engine.Change{}, o)
	var inf *engine.InfeasibleError
	if !errors.As(err, &inf) || inf.Constraint != engine.ConstraintDiskCapacity || inf.Subject != "t p0" || inf.Need != 450 || inf.Over() != 450 {
		t.Fatalf("want disk capacity error on t p0 over by 450, got %v", err)
	}
}

// Unknown capacity skips the disk check for that broker, and the plan says so.
func TestUnknownCapacityIsWarned(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(3, ""), 1000)
	brokers[2].CapacityBytes = 0
	parts := []engine.Partition{{Topic: "t", Partition: 0, Replicas: []int32{1}, SizeBytes: 10}}
	p := mustPlan(t, engine.Cluster{Brokers: brokers, Partitions: parts}, engine.Change{}, engine.DefaultOptions())
	found := false
	for _, w := range p.Warnings {
		found = found || strings.Contains(w, "capacity unknown for brokers [3]")
	}
	if !found {
		t.Fatalf("warnings %q do not name broker 3", p.Warnings)
	}
	if p.Brokers[2].LimitBytes != 0 || p.Brokers[0].LimitBytes != 800 {
		t.Fatalf("limits %d and %d, want 0 (unknown) and 800", p.Brokers[2].LimitBytes, p.Brokers[0].LimitBytes)
	}
}
