package engine_test

import (
	"math"
	"math/rand"
	"reflect"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// The groups' ETA's copy part is, per group, the busiest broker's bytes
// in (as a new replica) or out (as the partition's leader) over the
// throttle, summed over groups; the plan's ETA simulates the schedule it
// runs, which copies in no more time (GroupsInTurn says otherwise), and its
// EstimatedSeconds is its whole ETA at the plan's throttle.
func TestETACopyingIsBusiestBrokerPerGroup(t *testing.T) {
	old := brokersWithRacks(1, rackList(6, "a", "b", "c"), 0)
	c := engine.Cluster{Brokers: old, Partitions: spreadAssignment(old, topicNames(3), 20, 3, zipfSizes(1.3, 200), rand.New(rand.NewSource(8)))}
	ch := engine.Change{AddBrokers: brokersWithRacks(7, rackList(3, "a", "b", "c"), 0)}
	o := engine.DefaultOptions()
	p := mustPlan(t, c, ch, o)

	for _, throttle := range []int64{1 << 20, 10 << 20, o.ThrottleBytesPerSec} {
		var want float64
		for _, g := range p.Groups {
			in, out := map[int32]int64{}, map[int32]int64{}
			for _, m := range g.Moves() {
				for _, b := range m.Adding {
					in[b] += m.Bytes / int64(len(m.Adding))
				}
				out[m.OldReplicas[0]] += m.Bytes // every broker is alive
			}
			var busiest int64
			for _, v := range in {
				busiest = max(busiest, v)
			}
			for _, v := range out {
				busiest = max(busiest, v)
			}
			want += float64(busiest) / float64(throttle)
		}
		in := engine.ETAInputs{Throttle: throttle}
		got := engine.EstimateGroups(p.Groups, in).Copying
		if want == 0 || math.Abs(got.Seconds()-want) > 1e-6*float64(len(p.Groups)) {
			t.Fatalf("throttle %d: the groups' copy estimate %v, want %.3fs", throttle, got, want)
		}
		if p.GroupsInTurn {
			t.Fatalf("the plan runs its groups in turn")
		}
		cont := engine.EstimateContinuous(p, nil, nil, p.MaxMovesPerBroker, in)
		if e := p.ETA(in); !reflect.DeepEqual(e, cont) || e.Copying > got {
			t.Fatalf("throttle %d: the plan's ETA %s, want the continuous schedule's %s, copying in no more than the groups' %s", throttle, e, cont, got)
		}
	}
	if got := p.ETA(engine.ETAInputs{Throttle: o.ThrottleBytesPerSec}).Seconds(); got != p.EstimatedSeconds {
		t.Fatalf("EstimatedSeconds %d disagrees with the ETA's %ds", p.EstimatedSeconds, got)
	}
	if p.TotalBytes != p.Moves().Bytes() {
		t.Fatalf("total bytes %d, moves copy %d", p.TotalBytes, p.Moves().Bytes())
	}
}

func TestPlanHelpers(t *testing.T) {
	old := brokersWithRacks(1, rackList(4, ""), 0)
	c := engine.Cluster{Brokers: old, Partitions: spreadAssignment(old, []string{"b", "a"}, 6, 2, uniformSizes(10), rand.New(rand.NewSource(1)))}
	o := engine.DefaultOptions()
	o.MaxMovesPerStep = 1
	p := mustPlan(t, c, engine.Change{AddBrokers: brokersWithRacks(5, rackList(2, ""), 0)}, o)
	n := 0
	p.EachMove(func(g, s int, m engine.Move) {
		if !slices.ContainsFunc(p.Groups[g].Steps[s].Moves, func(x engine.Move) bool { return x.Topic == m.Topic && x.Partition == m.Partition }) {
			t.Fatalf("EachMove reports %s p%d in group %d step %d, where it is not", m.Topic, m.Partition, g, s)
		}
		n++
	})
	ms := p.Moves()
	if n != len(ms) || n == 0 {
		t.Fatalf("EachMove saw %d moves, Moves has %d", n, len(ms))
	}
	sorted := ms.Sorted()
	if !slices.IsSortedFunc(sorted, func(a, b engine.Move) int {
		if a.Topic != b.Topic {
			return map[bool]int{true: -1, false: 1}[a.Topic < b.Topic]
		}
		return int(a.Partition - b.Partition)
	}) || len(sorted) != len(ms) {
		t.Fatalf("Sorted moves out of order")
	}
	// One move per step when max_moves_per_step is 1.
	for _, g := range p.Groups {
		for _, s := range g.Steps {
			if len(s.Moves) != 1 {
				t.Fatalf("step with %d moves", len(s.Moves))
			}
		}
	}
	target := p.Target.Sorted()
	if !slices.EqualFunc(target, p.Target, func(a, b engine.Partition) bool { return a.Topic == b.Topic && a.Partition == b.Partition }) {
		t.Fatalf("target is not sorted by topic and partition")
	}
}

// Traffic sums every move per broker: what the new brokers receive is
// what the plan copies, and each replica received left some other broker.
func TestPlanTraffic(t *testing.T) {
	old := brokersWithRacks(1, rackList(6, "a", "b", "c"), 0)
	c := engine.Cluster{Brokers: old, Partitions: spreadAssignment(old, topicNames(4), 30, 3, zipfSizes(1.3, 200), rand.New(rand.NewSource(3)))}
	added := brokersWithRacks(7, rackList(3, "a", "b", "c"), 0)
	p := mustPlan(t, c, engine.Change{AddBrokers: added}, engine.DefaultOptions())
	tr := p.Traffic()
	var in, out int
	var bytesIn, bytesOut int64
	for id, x := range tr {
		in, out, bytesIn, bytesOut = in+x.MovesIn, out+x.MovesOut, bytesIn+x.BytesIn, bytesOut+x.BytesOut
		if id < 7 && x.MovesIn > 0 {
			t.Errorf("scale-out moved %d replicas onto old broker %d", x.MovesIn, id)
		}
	}
	if in != p.ReplicaMoves || out != p.ReplicaMoves || in == 0 {
		t.Fatalf("traffic has %d moves in and %d out, the plan %d replica moves", in, out, p.ReplicaMoves)
	}
	if bytesIn != p.TotalBytes || bytesOut != p.TotalBytes {
		t.Fatalf("traffic has %d bytes in and %d out, the plan copies %d", bytesIn, bytesOut, p.TotalBytes)
	}
}
