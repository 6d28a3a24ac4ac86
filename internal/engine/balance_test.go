package engine_test

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// randomAssignment places replicas at random on distinct brokers, ignoring
// racks and balance: a cluster that needs a rebalance.
func randomAssignment(r *rand.Rand, brokers []engine.Broker, topics []string, perTopic, rf int, sizes sizeFunc) []engine.Partition {
	var out []engine.Partition
	n := 0
	for _, t := range topics {
		for p := range perTopic {
			perm := r.Perm(len(brokers))[:rf]
			reps := make([]int32, rf)
			for k, i := range perm {
				reps[k] = brokers[i].ID
			}
			out = append(out, engine.Partition{Topic: t, Partition: int32(p), Replicas: reps, SizeBytes: sizes(r, n)})
			n++
		}
	}
	return out
}

func TestRebalanceBalancesReplicasLeadersAndBytes(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	brokers := brokersWithRacks(1, rackList(9, "a", "b", "c"), 0)
	// Skewed start: a third of the brokers hold most replicas.
	parts := randomAssignment(r, brokers[:4], topicNames(6), 150, 3, zipfSizes(1.3, 400))
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	o := engine.DefaultOptions()
	p := mustPlan(t, c, engine.Change{}, o)
	simulate(t, c, engine.Change{}, o, p)

	reps, leads := brokerCounts(p.Target)
	all := ids(brokers)
	// 900 partitions × 3 over 9 brokers: exactly 300 each; 100 leaders each.
	if lo, hi := spreadOf(reps, all); lo != 300 || hi != 300 {
		t.Fatalf("replicas per broker %d..%d, want 300..300", lo, hi)
	}
	if lo, hi := spreadOf(leads, all); lo != 100 || hi != 100 {
		t.Fatalf("leaders per broker %d..%d, want 100..100", lo, hi)
	}
	receiving := map[int32]bool{}
	for _, id := range all {
		receiving[id] = true
	}
	if probs := spreadProblems(brokers, receiving, p.Target, o.Awareness); len(probs) > 0 {
		t.Fatalf("spread: %v", probs[:min(5, len(probs))])
	}
	skew := byteSkew(p.Target, all)
	if skew > o.MaxDiskSkewPercent {
		t.Fatalf("byte skew %.2f%% above %g%%", skew, o.MaxDiskSkewPercent)
	}
	if d := skew - p.Score.ByteSkewPercent; d > 0.01 || d < -0.01 {
		t.Fatalf("plan reports byte skew %.2f%%, measured %.2f%%", p.Score.ByteSkewPercent, skew)
	}
	t.Logf("moves %d (bound %d), byte skew %.2f%%", p.ReplicaMoves, p.Score.LowerBound, skew)
}

func TestRebalanceOfBalancedClusterIsEmpty(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(6, "a", "b", "c"), 0)
	parts := spreadAssignment(brokers, topicNames(3), 12, 3, uniformSizes(1<<20), rand.New(rand.NewSource(1)))
	p := mustPlan(t, engine.Cluster{Brokers: brokers, Partitions: parts}, engine.Change{}, engine.DefaultOptions())
	if p.ReplicaMoves != 0 || len(p.Groups) != 0 || p.TotalBytes != 0 || p.Score.LowerBound != 0 {
		t.Fatalf("balanced cluster: %d moves, %d groups, %d bytes, bound %d", p.ReplicaMoves, len(p.Groups), p.TotalBytes, p.Score.LowerBound)
	}
}

// Leaders are balanced by reordering replica lists: no data moves, and the
// reorders appear both in the target and in their own list.
func TestLeadersBalanceByReorderOnly(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(4, ""), 0)
	var parts []engine.Partition
	// 12 partitions, RF 2, replicas balanced (6 each), every leader on 1 or 2.
	pairs := [][2]int32{{1, 3}, {2, 4}, {1, 4}, {2, 3}}
	for p := range 12 {
		pr := pairs[p%4]
		parts = append(parts, engine.Partition{Topic: "t", Partition: int32(p), Replicas: []int32{pr[0], pr[1]}, SizeBytes: 100})
	}
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	p := mustPlan(t, c, engine.Change{}, engine.DefaultOptions())
	if p.ReplicaMoves != 0 || p.TotalBytes != 0 || len(p.Groups) != 0 {
		t.Fatalf("reorder-only plan moved data: %d moves, %d bytes", p.ReplicaMoves, p.TotalBytes)
	}
	_, leads := brokerCounts(p.Target)
	for _, id := range ids(brokers) {
		if leads[id] != 3 {
			t.Fatalf("broker %d leads %d partitions, want 3 (%v)", id, leads[id], leads)
		}
	}
	if len(p.Reorders) != 6 {
		t.Fatalf("%d reorders, want 6 (half of the partitions hand leadership over)", len(p.Reorders))
	}
	for _, ro := range p.Reorders {
		if !engine.SameMembers(ro.OldReplicas, ro.NewReplicas) || slices.Equal(ro.OldReplicas, ro.NewReplicas) {
			t.Fatalf("reorder %+v changes membership or nothing", ro)
		}
		tp := p.Target[slices.IndexFunc(p.Target, func(x engine.Partition) bool { return x.Topic == ro.Topic && x.Partition == ro.Partition })]
		if !slices.Equal(tp.Replicas, ro.NewReplicas) {
			t.Fatalf("target %v differs from reorder %v", tp.Replicas, ro.NewReplicas)
		}
	}
	simulate(t, c, engine.Change{}, engine.DefaultOptions(), p)
}

// Uneven racks: a, b, c, a, b and RF 3. Rack c's only broker must hold a
// replica of every partition, so ±1 is impossible; the plan reports the
// bound the racks allow and meets it.
func TestUnevenRacksBound(t *testing.T) {
	brokers := brokersWithRacks(1, []string{"a", "b", "c", "a", "b"}, 0)
	const P = 60
	r := rand.New(rand.NewSource(3))
	parts := randomAssignment(r, brokers, []string{"t"}, P, 3, uniformSizes(1<<20))
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	p := mustPlan(t, c, engine.Change{}, engine.DefaultOptions())
	reps, leads := brokerCounts(p.Target)
	// Each rack holds exactly one replica of each partition: rack c's broker
	// 3 holds P, and racks a and b split P over two brokers each.
	want := map[int32]int{1: P / 2, 2: P / 2, 3: P, 4: P / 2, 5: P / 2}
	for id, n := range want {
		if reps[id] != n {
			t.Fatalf("broker %d holds %d replicas, want %d (all: %v)", id, reps[id], n, reps)
		}
	}
	for _, bp := range p.Brokers {
		if bp.TargetReplicas.Min != want[bp.Broker] || bp.TargetReplicas.Max != want[bp.Broker] {
			t.Fatalf("broker %d target range %+v, want %d", bp.Broker, bp.TargetReplicas, want[bp.Broker])
		}
	}
	if p.Score.ReplicaBoundSpread != P-P/2 || p.Score.ReplicaSpread != P-P/2 || p.Score.ReplicasOutOfRange != 0 {
		t.Fatalf("score %+v: want spread and bound %d, nothing out of range", p.Score, P-P/2)
	}
	// Leaders are not constrained by racks: 60 over 5 brokers, 12 each.
	for _, id := range ids(brokers) {
		if leads[id] != P/5 {
			t.Fatalf("broker %d leads %d, want %d", id, leads[id], P/5)
		}
	}
	receiving := map[int32]bool{1: true, 2: true, 3: true, 4: true, 5: true}
	if probs := spreadProblems(brokers, receiving, p.Target, engine.Awareness{}); len(probs) > 0 {
		t.Fatalf("spread: %v", probs)
	}
}

// A rebalance in place of a cluster kept balanced (KeptBalanced) that
// bytes beyond max_disk_skew_percent asked for evens them to half of it,
// so that writes spread over every broker after it do not bring the
// cluster back over the limit at once: the plan right after the rebalance
// stays empty while partitions grow (make soak found it planning 2 more
// moves at 11.6%). A cluster within the limit is left as it is.
func TestRebalanceLeavesRoomForWrites(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	brokers := brokersWithRacks(1, rackList(6, "a", "b", "c"), 0)
	parts := spreadAssignment(brokers, topicNames(4), 24, 3, zipfSizes(1.1, 200), r)
	o := engine.DefaultOptions()
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	before := byteSkew(parts, ids(brokers))
	if before <= o.MaxDiskSkewPercent {
		t.Fatalf("the test's cluster starts at %.2f%% byte skew; it needs more than %g%%", before, o.MaxDiskSkewPercent)
	}
	p := mustPlan(t, c, engine.Change{}, engine.KeptBalanced(o))
	after := byteSkew(p.Target, ids(brokers))
	if goal := max(o.MaxDiskSkewPercent/2, p.Score.ByteSkewFloorPercent); after > goal {
		t.Fatalf("a rebalance from %.2f%% left bytes %.2f%% from their share; want at most %.2f%% (half of %g%%, or the floor)",
			before, after, goal, o.MaxDiskSkewPercent)
	}

	// Every partition grows by up to 4 % of its size, as writes do.
	grown := engine.Cluster{Brokers: brokers}
	for _, tp := range p.Target {
		tp.SizeBytes += tp.SizeBytes * int64(r.Intn(5)) / 100
		grown.Partitions = append(grown.Partitions, tp)
	}
	reasons, _, err := engine.OutOfBalance(grown, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(reasons) > 0 {
		t.Fatalf("after the rebalance (%.2f%%) and writes (%.2f%%) the cluster is out of balance again: %v",
			after, byteSkew(grown.Partitions, ids(brokers)), reasons)
	}
	t.Logf("byte skew %.2f%% -> %.2f%% in %d moves; %.2f%% after the writes", before, after, p.ReplicaMoves, byteSkew(grown.Partitions, ids(brokers)))

	// Within the limit, nothing moves for bytes.
	again := mustPlan(t, grown, engine.Change{}, engine.KeptBalanced(o))
	if again.ReplicaMoves != 0 {
		t.Fatalf("a cluster within max_disk_skew_percent planned %d moves", again.ReplicaMoves)
	}
}

// A scale-out or scale-in of a cluster kept balanced (KeptBalanced) evens
// bytes too, once they stray beyond max_disk_skew_percent: otherwise the
// plan right after it asks for a rebalance in place (make soak, seed 3:
// "a broker's bytes are 13.2% from its share" after a scale-out 6 -> 7).
// Without the option the change still moves only what it must.
func TestKeptBalancedScaleEvensBytes(t *testing.T) {
	o := engine.DefaultOptions()
	found := 0
	for seed := int64(0); seed < 40; seed++ {
		r := rand.New(rand.NewSource(seed))
		brokers := brokersWithRacks(1, rackList(6, "a", "b", "c"), 0)
		parts := spreadAssignment(brokers, topicNames(6), 24, 3, zipfSizes(1.1, 50), r)
		c := engine.Cluster{Brokers: brokers, Partitions: parts}
		for _, ch := range []engine.Change{
			{AddBrokers: brokersWithRacks(7, []string{"a"}, 0)},
			{RemoveBrokers: []int32{6}},
		} {
			plain := mustPlan(t, c, ch, o)
			var after []int32
			for _, b := range plain.Brokers {
				if !b.Removed {
					after = append(after, b.Broker)
				}
			}
			if byteSkew(plain.Target, after) <= o.MaxDiskSkewPercent {
				continue
			}
			found++
			kept := mustPlan(t, c, ch, engine.KeptBalanced(o))
			res := engine.Cluster{Partitions: kept.Target}
			for _, b := range kept.Brokers {
				if !b.Removed {
					res.Brokers = append(res.Brokers, engine.Broker{ID: b.Broker, Rack: b.Rack, Alive: true})
				}
			}
			// The next plan: a rebalance in place of what the change left.
			next := mustPlan(t, res, engine.Change{}, engine.KeptBalanced(o))
			if next.ReplicaMoves > 0 {
				reasons, _, _ := engine.OutOfBalance(res, o)
				t.Errorf("seed %d, %+v: kept balanced, the next plan moves %d replicas (%.2f%% plain, %d moves; %.2f%% kept, %d moves): %v",
					seed, ch, next.ReplicaMoves, byteSkew(plain.Target, after), plain.ReplicaMoves, byteSkew(kept.Target, after), kept.ReplicaMoves, reasons)
			}
		}
	}
	if found == 0 {
		t.Fatal("no seed left a plain change beyond max_disk_skew_percent; the test proves nothing")
	}
	t.Logf("%d changes beyond the limit without keep_balanced", found)
}

// Racks of 3, 2 and 2 brokers, partitions of factor 3 larger than those
// of factor 2: every partition of factor 3 has one replica in each rack,
// so the brokers of the smaller racks must hold more of those bytes than
// a share of all replicas says. The byte shares follow the racks per
// factor, and a kept-balanced rebalance ends within them. With one share
// of all replicas for all bytes, it ended 14.1% (and 16.7% with no factor
// 2 bytes) from it, and every plan after it asked again (the soak, seed
// 22 step 24: "broker 6's bytes are 15.4% from its share" right after a
// rebalance).
func TestKeptBalancedBytesFollowTheRacksPerReplicationFactor(t *testing.T) {
	o := engine.DefaultOptions()
	for _, mix := range []struct{ rf3, rf2 int64 }{{10 << 20, 10 << 20}, {10 << 20, 1 << 20}, {10 << 20, 0}} {
		r := rand.New(rand.NewSource(1))
		brokers := brokersWithRacks(1, []string{"a", "b", "c", "a", "b", "c", "a"}, 0)
		parts := spreadAssignment(brokers, []string{"big"}, 24, 3, func(*rand.Rand, int) int64 { return mix.rf3 }, r)
		parts = append(parts, spreadAssignment(brokers, []string{"small"}, 24, 2, func(*rand.Rand, int) int64 { return mix.rf2 }, r)...)
		p := mustPlan(t, engine.Cluster{Brokers: brokers, Partitions: parts}, engine.Change{}, engine.KeptBalanced(o))
		after := engine.Cluster{Brokers: brokers, Partitions: p.Target}
		if reasons, _, err := engine.OutOfBalance(after, o); err != nil || len(reasons) > 0 {
			t.Errorf("factor 3 at %d MiB, factor 2 at %d MiB: after the rebalance (%d moves): %v %v", mix.rf3>>20, mix.rf2>>20, p.ReplicaMoves, reasons, err)
		}
		if again := mustPlan(t, after, engine.Change{}, engine.KeptBalanced(o)); again.ReplicaMoves != 0 {
			t.Errorf("factor 3 at %d MiB, factor 2 at %d MiB: the plan after the rebalance moves %d replicas", mix.rf3>>20, mix.rf2>>20, again.ReplicaMoves)
		}
	}
}
