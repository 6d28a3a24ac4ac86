package engine_test

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

func rackCounts(brokers []engine.Broker, leaving []int32) map[string]int {
	out := map[string]int{}
	for _, b := range brokers {
		if !slices.Contains(leaving, b.ID) {
			out[b.Rack]++
		}
	}
	return out
}

// The layout of issue 11: removing the two highest ids would leave racks
// 3/1/1, and two brokers would hold a replica of every partition.
func TestChooseLeavingKeepsRacksEven(t *testing.T) {
	brokers := brokersWithRacks(1, []string{"a", "a", "a", "b", "b", "c", "c"}, 0)
	parts := spreadAssignment(brokers, topicNames(2), 20, 3, uniformSizes(100), rand.New(rand.NewSource(1)))
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	l, err := engine.ChooseLeaving(c, 5, nil, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := rackCounts(brokers, l.Brokers)
	split := []int{got["a"], got["b"], got["c"]}
	slices.Sort(split)
	if fmt.Sprint(split) != "[1 2 2]" {
		t.Fatalf("leaving %v leaves racks %v; want 2/2/1", l.Brokers, got)
	}
	// Rack a's brokers hold the fewest replicas (RF 3 over 3 racks), so
	// taking two of them moves the fewest bytes.
	if got["a"] != 1 {
		t.Fatalf("leaving %v leaves racks %v; want two of rack a to leave, the fewest bytes", l.Brokers, got)
	}
	if l.Replace || len(l.Dead) != 0 {
		t.Fatalf("choice %+v: not a replacement and nothing dead", l)
	}
	// The plan that follows keeps every partition spread over the 3 racks.
	p := mustPlan(t, c, engine.Change{RemoveBrokers: l.Brokers}, engine.DefaultOptions())
	receiving := map[int32]bool{}
	for _, b := range brokers {
		receiving[b.ID] = !slices.Contains(l.Brokers, b.ID)
	}
	if probs := spreadProblems(brokers, receiving, p.Target, engine.Awareness{}); len(probs) > 0 {
		t.Fatalf("spread: %v", probs)
	}
}

// Every awareness dimension counts: zones first, then racks within them.
func TestChooseLeavingKeepsEveryDimensionEven(t *testing.T) {
	// Zone z1 has 4 brokers in racks r1,r1,r1,r2; zone z2 has 2.
	brokers := brokersWithRacks(1, []string{"z1/r1", "z1/r1", "z1/r1", "z1/r2", "z2/r1", "z2/r2"}, 0)
	o := engine.DefaultOptions()
	o.Awareness = engine.Awareness{Separator: "/", Dimensions: []string{"zone", "rack"}}
	l, err := engine.ChooseLeaving(engine.Cluster{Brokers: brokers}, 4, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	// Zones 2/2, and inside z1 one broker per rack: two of z1/r1 leave.
	if got := rackCounts(brokers, l.Brokers); got["z1/r1"] != 1 || got["z1/r2"] != 1 || got["z2/r1"] != 1 || got["z2/r2"] != 1 {
		t.Fatalf("leaving %v leaves %v; want one broker in each rack", l.Brokers, got)
	}
	// Among equal brokers of z1/r1 (1, 2, 3, no data), the highest ids.
	if fmt.Sprint(l.Brokers) != "[2 3]" {
		t.Fatalf("leaving %v; want [2 3]", l.Brokers)
	}
}

func TestChooseLeavingTieBreaks(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(4, ""), 0)
	// Broker 4 holds the most bytes, broker 2 the fewest.
	parts := []engine.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 4}, SizeBytes: 500},
		{Topic: "t", Partition: 1, Replicas: []int32{3, 4}, SizeBytes: 100},
		{Topic: "t", Partition: 2, Replicas: []int32{1, 3}, SizeBytes: 10},
	}
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	l, err := engine.ChooseLeaving(c, 3, nil, engine.DefaultOptions())
	if err != nil || fmt.Sprint(l.Brokers) != "[2]" {
		t.Fatalf("leaving %v, %v; want [2], the broker with the fewest bytes", l.Brokers, err)
	}
	// With no data at all, the highest ids leave.
	l, err = engine.ChooseLeaving(engine.Cluster{Brokers: brokers}, 2, nil, engine.DefaultOptions())
	if err != nil || fmt.Sprint(l.Brokers) != "[3 4]" {
		t.Fatalf("leaving %v, %v; want [3 4]", l.Brokers, err)
	}
	// Bytes within a tenth of each other are a tie, and the highest id
	// leaves: partitions grow between the plan and the apply, and the
	// apply must remove the broker the plan named.
	near := []engine.Partition{
		{Topic: "t", Partition: 0, Replicas: []int32{1, 2}, SizeBytes: 1000},
		{Topic: "t", Partition: 1, Replicas: []int32{3, 4}, SizeBytes: 1040},
	}
	l, err = engine.ChooseLeaving(engine.Cluster{Brokers: brokers, Partitions: near}, 3, nil, engine.DefaultOptions())
	if err != nil || fmt.Sprint(l.Brokers) != "[4]" {
		t.Fatalf("leaving %v, %v; want [4]: 4%% more bytes is not a reason to remove a lower id", l.Brokers, err)
	}
}

// A dead broker leaves first, whatever its rack or bytes.
func TestChooseLeavingPrefersDeadBrokers(t *testing.T) {
	brokers := brokersWithRacks(1, []string{"a", "b", "c", "a"}, 0)
	brokers[1].Alive = false // broker 2, alone in rack b
	parts := spreadAssignment(brokers, topicNames(1), 12, 3, uniformSizes(100), rand.New(rand.NewSource(1)))
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	l, err := engine.ChooseLeaving(c, 3, nil, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(l.Brokers) != "[2]" || fmt.Sprint(l.Dead) != "[2]" {
		t.Fatalf("choice %+v; want broker 2, dead, to leave", l)
	}
}

func TestChooseLeavingRefusals(t *testing.T) {
	brokers := brokersWithRacks(1, rackList(4, "a", "b", "c"), 0)
	parts := spreadAssignment(brokers, []string{"orders"}, 8, 3, uniformSizes(1), rand.New(rand.NewSource(1)))
	healthy := engine.Cluster{Brokers: brokers, Partitions: parts}
	deadBrokers := slices.Clone(brokers)
	deadBrokers[3].Alive = false
	withDead := engine.Cluster{Brokers: deadBrokers, Partitions: parts}

	for _, tc := range []struct {
		name   string
		c      engine.Cluster
		target int
		ids    []int32
		want   engine.LeavingError
	}{
		{"unknown id", healthy, 3, []int32{9}, engine.LeavingError{Reason: engine.NotRegistered, Field: engine.FieldNamedBrokers, Brokers: []int32{9}}},
		{"duplicate", healthy, 2, []int32{4, 4}, engine.LeavingError{Reason: engine.NamedTwice, Field: engine.FieldNamedBrokers, Brokers: []int32{4}}},
		{"count mismatch", healthy, 3, []int32{3, 4}, engine.LeavingError{Reason: engine.NamedCountMismatch, Field: engine.FieldNamedBrokers, Brokers: []int32{3, 4}}},
		{"ids on a scale-out", healthy, 5, []int32{4}, engine.LeavingError{Reason: engine.NamedOnScaleOut, Field: engine.FieldNamedBrokers, Brokers: []int32{4}}},
		{"below the largest RF", healthy, 2, []int32{3, 4}, engine.LeavingError{Reason: engine.BelowReplicationFactor, Field: engine.FieldNamedBrokers,
			Brokers: []int32{3, 4}, Staying: 2, ReplicationFactor: 3, Topic: "orders"}},
		{"default below RF", healthy, 2, nil, engine.LeavingError{Reason: engine.BelowReplicationFactor, Field: engine.FieldBrokerCount,
			Brokers: []int32{1, 4}, Staying: 2, ReplicationFactor: 3, Topic: "orders"}},
		{"scale-out with a dead broker", withDead, 5, nil, engine.LeavingError{Reason: engine.DeadOnScaleOut, Field: engine.FieldBrokerCount, Dead: []int32{4}}},
		{"live removal while another is dead", withDead, 3, []int32{3}, engine.LeavingError{Reason: engine.DeadKept, Field: engine.FieldNamedBrokers,
			Brokers: []int32{3}, Dead: []int32{4}}},
		{"live replacement while another is dead", withDead, 4, []int32{3}, engine.LeavingError{Reason: engine.DeadKept, Field: engine.FieldNamedBrokers,
			Brokers: []int32{3}, Dead: []int32{4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := engine.ChooseLeaving(tc.c, tc.target, tc.ids, engine.DefaultOptions())
			var le *engine.LeavingError
			if !errors.As(err, &le) {
				t.Fatalf("want *LeavingError, got %v", err)
			}
			want := tc.want
			want.Registered, want.Current, want.Target = []int32{1, 2, 3, 4}, 4, tc.target
			if !reflect.DeepEqual(*le, want) {
				t.Fatalf("refusal %+v; want %+v", *le, want)
			}
			if le.Error() == "" {
				t.Fatal("no message")
			}
		})
	}

	// Healing is allowed: remove or replace the dead broker.
	if l, err := engine.ChooseLeaving(withDead, 3, []int32{4}, engine.DefaultOptions()); err != nil || l.Replace || fmt.Sprint(l.Dead) != "[4]" {
		t.Fatalf("removal of dead broker 4: %+v, %v", l, err)
	}
	if l, err := engine.ChooseLeaving(withDead, 4, []int32{4}, engine.DefaultOptions()); err != nil || !l.Replace || fmt.Sprint(l.Brokers) != "[4]" {
		t.Fatalf("replacement of dead broker 4: %+v, %v", l, err)
	}
}

// Replacing a dead broker with a new one in its rack moves exactly the dead
// broker's replicas, each onto the new broker; the choice says the broker is
// dead and how many partitions the change heals.
func TestReplaceDeadBrokerMovesOnlyItsShare(t *testing.T) {
	brokers := brokersWithRacks(1, []string{"a", "b", "c", "a"}, 1<<40)
	parts := spreadAssignment(brokers, topicNames(3), 16, 3, uniformSizes(1<<20), rand.New(rand.NewSource(3)))
	brokers[3].Alive = false
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	var share []string
	for _, p := range parts {
		if slices.Contains(p.Replicas, 4) {
			share = append(share, fmt.Sprintf("%s p%d", p.Topic, p.Partition))
		}
	}
	ch := engine.Change{AddBrokers: []engine.Broker{{ID: 5, Rack: "a", Alive: true, CapacityBytes: 1 << 40}}, RemoveBrokers: []int32{4}}
	p := mustPlan(t, c, ch, engine.DefaultOptions())
	if p.ReplicaMoves != len(share) {
		t.Fatalf("moves %d; want %d, broker 4's share", p.ReplicaMoves, len(share))
	}
	p.Moves().Each(func(m engine.Move) {
		if fmt.Sprint(m.Removing) != "[4]" || fmt.Sprint(m.Adding) != "[5]" {
			t.Fatalf("%s p%d removes %v and adds %v; want 4 replaced by 5", m.Topic, m.Partition, m.Removing, m.Adding)
		}
	})
	l, err := engine.ChooseLeaving(c, 4, []int32{4}, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Brokers [4] are dead (fenced or offline). %d partitions have a replica on them and are under-replicated now; the apply heals them", len(share))
	if !l.Replace || l.UnderReplicated != len(share) || !strings.Contains(l.HealingNote(), want) {
		t.Fatalf("choice %+v, note %q; want a replacement healing %d partitions", l, l.HealingNote(), len(share))
	}
	simulate(t, c, ch, engine.DefaultOptions(), p)
}

// A replacement is not a rebalance: even when the leaving broker held less
// than its rack mate, its successor takes exactly its replicas, in their
// places in the replica lists.
func TestReplaceMovesOnlyTheShareOfAnUnevenBroker(t *testing.T) {
	brokers := brokersWithRacks(1, []string{"a", "b", "c", "a"}, 0)
	brokers[3].Alive = false
	var parts []engine.Partition
	for p := range 12 {
		a := int32(1)
		if p < 2 {
			a = 4
		}
		parts = append(parts, engine.Partition{Topic: "t", Partition: int32(p), Replicas: []int32{a, 2, 3}, SizeBytes: 10})
	}
	c := engine.Cluster{Brokers: brokers, Partitions: parts}
	ch := engine.Change{AddBrokers: []engine.Broker{{ID: 5, Rack: "a", Alive: true}}, RemoveBrokers: []int32{4}}
	p := mustPlan(t, c, ch, engine.DefaultOptions())
	if p.ReplicaMoves != 2 {
		t.Fatalf("moves %d; want 2, broker 4's share, and no rebalancing of rack a", p.ReplicaMoves)
	}
	for _, tp := range p.Target[:2] {
		if tp.Replicas[0] != 5 && !slices.Contains(tp.Replicas, 5) {
			t.Fatalf("%s p%d: %v; want broker 5 in broker 4's place", tp.Topic, tp.Partition, tp.Replicas)
		}
	}
	// A successor in another rack would break the spread: the general
	// planner runs instead and keeps every partition spread.
	ch.AddBrokers[0].Rack = "b"
	p = mustPlan(t, c, ch, engine.DefaultOptions())
	receiving := map[int32]bool{1: true, 2: true, 3: true, 5: true}
	all := append(slices.Clone(brokers), ch.AddBrokers[0])
	if probs := spreadProblems(all, receiving, p.Target, engine.Awareness{}); len(probs) > 0 {
		t.Fatalf("spread: %v", probs)
	}
}

// The refusal below a replication factor names a topic the user can act
// on, the same whatever order the partitions come in: a user's topic
// before Kafka's internal ones, then by name.
func TestChooseLeavingNamesAUsersTopic(t *testing.T) {
	brokers := []engine.Broker{{ID: 1, Rack: "a", Alive: true}, {ID: 2, Rack: "b", Alive: true}, {ID: 3, Rack: "c", Alive: true}}
	parts := []engine.Partition{
		{Topic: "__consumer_offsets", Partition: 0, Replicas: []int32{1, 2, 3}},
		{Topic: "orders", Partition: 0, Replicas: []int32{2, 3, 1}},
		{Topic: "audit", Partition: 0, Replicas: []int32{3, 1, 2}},
	}
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}} {
		c := engine.Cluster{Brokers: brokers}
		for _, i := range order {
			c.Partitions = append(c.Partitions, parts[i])
		}
		_, err := engine.ChooseLeaving(c, 2, nil, engine.DefaultOptions())
		var le *engine.LeavingError
		if !errors.As(err, &le) || le.Topic != "audit" {
			t.Fatalf("partitions in order %v: %v; want the refusal to name topic audit", order, err)
		}
	}
}
