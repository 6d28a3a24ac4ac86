package engine_test

import (
	"math/rand"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// scaleOutCase builds a rack-aware, spread cluster of old brokers over three
// racks and the brokers to add, with Zipf-distributed partition sizes.
func scaleOutCase(oldBrokers, newBrokers, partitions, rf int, seed int64) (engine.Cluster, engine.Change) {
	r := rand.New(rand.NewSource(seed))
	racks := []string{"a", "b", "c"}
	old := brokersWithRacks(1, rackList(oldBrokers, racks...), 0)
	topics := topicNames(partitions / 1000)
	perTopic := 1000
	if len(topics) == 0 {
		topics, perTopic = topicNames(1), partitions
	}
	parts := spreadAssignment(old, topics, perTopic, rf, zipfSizes(1.3, 2000), r)
	p, err := engine.PlanReassignment(engine.Cluster{Brokers: old, Partitions: parts}, engine.Change{}, engine.DefaultOptions())
	if err != nil {
		panic(err)
	}
	parts = p.Target
	// New brokers continue the rack rotation, so racks stay as even as the
	// counts allow.
	newRacks := make([]string, newBrokers)
	for k := range newRacks {
		newRacks[k] = racks[(oldBrokers+k)%len(racks)]
	}
	add := brokersWithRacks(int32(oldBrokers+1), newRacks, 0)
	return engine.Cluster{Brokers: old, Partitions: parts}, engine.Change{AddBrokers: add}
}

func benchmarkScaleOut(b *testing.B, oldBrokers, newBrokers, partitions int) {
	c, ch := scaleOutCase(oldBrokers, newBrokers, partitions, 3, 42)
	o := engine.DefaultOptions()
	b.ReportAllocs()
	var p *engine.Plan
	var cpu time.Duration
	for b.Loop() {
		start := cpuTime()
		var err error
		p, err = engine.PlanReassignment(c, ch, o)
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - start
	}
	b.StopTimer()
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	}
	s := p.Score
	bound := scaleOutBound(c, ch)
	if p.ReplicaMoves != bound || s.LowerBound != bound {
		b.Fatalf("moves %d, planner's bound %d, independent bound %d", p.ReplicaMoves, s.LowerBound, bound)
	}
	b.ReportMetric(float64(p.ReplicaMoves), "moves")
	b.ReportMetric(float64(bound), "lowerbound")
	b.ReportMetric(float64(p.ReplicaMoves)/float64(bound), "ratio")
	b.ReportMetric(float64(s.ReplicaSpread), "replica_spread")
	b.ReportMetric(float64(s.ReplicaBoundSpread), "replica_bound")
	b.ReportMetric(float64(s.LeaderSpread), "leader_spread")
	b.ReportMetric(s.ByteSkewPercent, "byte_skew_%")
	b.ReportMetric(s.LargestPartitionPercent, "largest_part_%")
	b.ReportMetric(float64(len(p.Groups)), "groups")
}

// BenchmarkScaleOutLarge: 100 → 120 brokers over 3 racks, 100,000
// partitions, RF 3, Zipf sizes.
func BenchmarkScaleOutLarge(b *testing.B) { benchmarkScaleOut(b, 100, 20, 100_000) }

// BenchmarkScaleOutSmall: 12 → 15 brokers, 5,000 partitions.
func BenchmarkScaleOutSmall(b *testing.B) { benchmarkScaleOut(b, 12, 3, 5_000) }

// BenchmarkScaleOutCruiseControlScale: 200 → 215 brokers over 3 racks,
// 933,000 partitions at RF 3 (2.8M replicas), Zipf sizes: the scale
// Cruise Control published (cruise-control#1592). `make bench-scale` runs it
// next to the figures measured before the engine was tuned for it.
func BenchmarkScaleOutCruiseControlScale(b *testing.B) { benchmarkScaleOut(b, 200, 15, 933_000) }
