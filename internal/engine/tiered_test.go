package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// tieredScaleOut is 12 partitions of RF 2 on brokers 1-3, of 100 MiB
// each on the brokers' disks; when tiered, a new replica copies 10 MiB of
// them and 900 MiB stay in remote storage.
func tieredScaleOut(tiered bool) engine.Cluster {
	const mib = 1 << 20
	brokers := brokersWithRacks(1, rackList(3, ""), 0)
	var parts []engine.Partition
	for i := range int32(12) {
		p := engine.Partition{Topic: "t", Partition: i, Replicas: []int32{i%3 + 1, (i+1)%3 + 1}, SizeBytes: 100 * mib}
		if tiered {
			p.CopyBytes, p.RemoteBytes = 10*mib, 900*mib
		}
		parts = append(parts, p)
	}
	return engine.Cluster{Brokers: brokers, Partitions: parts}
}

// A move of a tiered partition copies its CopyBytes, not its size: the
// moves, their bytes, the plan's total, its score and its ETA count them,
// the plan names what stays in remote storage, and the moves themselves
// are those of the same cluster untiered (the balance is of local bytes).
func TestTieredMoveCostsCopyBytes(t *testing.T) {
	const mib = 1 << 20
	ch := engine.Change{AddBrokers: brokersWithRacks(4, rackList(1, ""), 0)}
	o := engine.DefaultOptions()
	o.ThrottleBytesPerSec = 10 * mib
	whole := mustPlan(t, tieredScaleOut(false), ch, o)
	c := tieredScaleOut(true)
	p := mustPlan(t, c, ch, o)
	simulate(t, c, ch, o, p)

	if p.ReplicaMoves == 0 || p.ReplicaMoves != whole.ReplicaMoves || p.Score.Moves != p.Score.LowerBound {
		t.Fatalf("tiered: %d moves (lower bound %d), untiered %d: want the same moves, at the lower bound",
			p.ReplicaMoves, p.Score.LowerBound, whole.ReplicaMoves)
	}
	if !slices.EqualFunc(p.Target, whole.Target, func(a, b engine.Partition) bool { return slices.Equal(a.Replicas, b.Replicas) }) {
		t.Fatal("the tiered cluster's target differs from the untiered one's: the balance must count local bytes only")
	}
	moving := 0
	p.EachMove(func(_, _ int, m engine.Move) {
		if want := 10 * mib * int64(len(m.Adding)); m.Bytes != want {
			t.Errorf("%s p%d adding %v copies %d bytes, want %d (CopyBytes per new replica)", m.Topic, m.Partition, m.Adding, m.Bytes, want)
		}
		// What the new replica builds its start from (TieredStartTime).
		if m.RemoteBytes != 900*mib {
			t.Errorf("%s p%d adding %v: remote bytes %d, want %d", m.Topic, m.Partition, m.Adding, m.RemoteBytes, 900*mib)
		}
		moving++
	})
	if want := 10 * mib * int64(p.ReplicaMoves); p.TotalBytes != want || p.Score.MovedBytes != want {
		t.Fatalf("total %d bytes, score %d; want %d", p.TotalBytes, p.Score.MovedBytes, want)
	}
	if whole.TotalBytes != 10*p.TotalBytes || whole.RemoteBytes != 0 {
		t.Fatalf("untiered: total %d, remote %d; want %d and 0", whole.TotalBytes, whole.RemoteBytes, 10*p.TotalBytes)
	}
	if want := 900 * mib * int64(moving); p.RemoteBytes != want {
		t.Fatalf("remote bytes %d, want %d: 900 MiB for each of the %d moving partitions", p.RemoteBytes, want, moving)
	}
	in := engine.ETAInputs{Throttle: o.ThrottleBytesPerSec}
	got, full := p.ETA(in), whole.ETA(in)
	if got.Bytes != p.TotalBytes || got.Copying*10 != full.Copying {
		t.Fatalf("ETA copies %d bytes in %v; the untiered plan's %d in %v: want a tenth", got.Bytes, got.Copying, full.Bytes, full.Copying)
	}
	if got.Settling < full.Settling+engine.TieredStartTime {
		t.Fatalf("ETA settles in %v, the untiered plan's in %v: want at least %v more for the new replicas' start from remote storage",
			got.Settling, full.Settling, engine.TieredStartTime)
	}
	// The target keeps the tiered figures, so that a plan from it counts
	// the same.
	for _, tp := range p.Target {
		if tp.CopyBytes != 10*mib || tp.RemoteBytes != 900*mib {
			t.Fatalf("target %s p%d lost its copy (%d) or remote (%d) bytes", tp.Topic, tp.Partition, tp.CopyBytes, tp.RemoteBytes)
		}
	}
}

// The disk check charges a new replica's destination its CopyBytes: the
// swap of TestDiskDeadlockIsRefusedUpFront, refused when the 100-byte
// replica has to land whole on a broker holding 1000 of 1050 bytes, plans
// when the partitions tier and a new replica copies 20 bytes, and the peak
// it reports is that copy. The balance still counts local sizes.
func TestTieredDiskCheckChargesCopyBytes(t *testing.T) {
	cluster := func(copyBytes int64) engine.Cluster {
		brokers := brokersWithRacks(1, rackList(2, ""), 1050)
		brokers[0].UsedBytes, brokers[1].UsedBytes = 1000, 1000
		parts := []engine.Partition{
			{Topic: "t", Partition: 0, Replicas: []int32{1}, SizeBytes: 120},
			{Topic: "t", Partition: 1, Replicas: []int32{1}, SizeBytes: 120},
			{Topic: "t", Partition: 2, Replicas: []int32{2}, SizeBytes: 100},
			{Topic: "t", Partition: 3, Replicas: []int32{2}, SizeBytes: 100},
		}
		for k := range parts {
			parts[k].CopyBytes = copyBytes
		}
		return engine.Cluster{Brokers: brokers, Partitions: parts}
	}
	o := engine.DefaultOptions()
	o.MinFreeDiskPercent = 0
	o.MaxDiskSkewPercent = 1

	var inf *engine.InfeasibleError
	if _, err := engine.PlanReassignment(cluster(0), engine.Change{}, o); !errors.As(err, &inf) || inf.Need != 1100 {
		t.Fatalf("untiered: want the disk capacity error needing 1100 bytes, got %v", err)
	}
	c := cluster(20)
	p := mustPlan(t, c, engine.Change{}, o)
	peak := simulate(t, c, engine.Change{}, o, p)
	if p.ReplicaMoves != 2 || p.TotalBytes != 40 {
		t.Fatalf("tiered: %d moves of %d bytes, want the swap: 2 moves of 20 bytes", p.ReplicaMoves, p.TotalBytes)
	}
	for _, b := range p.Brokers {
		if b.PeakDiskBytes != 1020 || peak[b.Broker] != 1020 {
			t.Fatalf("broker %d peaks at %d (simulated %d), want 1020: its 1000 bytes and the 20-byte copy", b.Broker, b.PeakDiskBytes, peak[b.Broker])
		}
	}
	// A copy that does not fit is refused with what it copies.
	c = cluster(60)
	if _, err := engine.PlanReassignment(c, engine.Change{}, o); !errors.As(err, &inf) || inf.Need != 1060 || inf.Over() != 10 {
		t.Fatalf("tiered, 60-byte copies: want the disk capacity error needing 1060 bytes, got %v", err)
	}
}

// A negative CopyBytes or RemoteBytes is refused like a negative size.
func TestTieredBytesValidated(t *testing.T) {
	c := tieredScaleOut(true)
	c.Partitions[3].CopyBytes = -1
	var ie *engine.InputError
	if _, err := engine.PlanReassignment(c, engine.Change{}, engine.DefaultOptions()); !errors.As(err, &ie) {
		t.Fatalf("want an input error for a negative CopyBytes, got %v", err)
	}
}
