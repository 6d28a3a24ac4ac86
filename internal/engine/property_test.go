package engine_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// randomCase is one random cluster and change, reproducible from its seed.
type randomCase struct {
	c     engine.Cluster
	ch    engine.Change
	o     engine.Options
	kind  string
	known bool // every capacity known
}

func newRandomCase(seed int64) randomCase {
	r := rand.New(rand.NewSource(seed))
	nb := 3 + r.Intn(10)
	nracks := 1 + r.Intn(4)
	twoDims := r.Intn(4) == 0
	rackName := func() string {
		k := r.Intn(nracks)
		if twoDims {
			return fmt.Sprintf("z%d/r%d", k%2, k)
		}
		return fmt.Sprintf("r%d", k)
	}
	var brokers []engine.Broker
	for k := range nb {
		brokers = append(brokers, engine.Broker{ID: int32(k * 2), Rack: rackName(), Alive: true})
	}
	sizes := uniformSizes(int64(1+r.Intn(1000)) << 20)
	if r.Intn(2) == 0 {
		sizes = zipfSizes(1.2+r.Float64(), uint64(10+r.Intn(500)))
	}
	var parts []engine.Partition
	for t := range 1 + r.Intn(4) {
		rf := 1 + r.Intn(min(3, nb))
		perTopic := 1 + r.Intn(40)
		topic := fmt.Sprintf("topic-%d", t)
		if r.Intn(2) == 0 {
			parts = append(parts, randomAssignment(r, brokers, []string{topic}, perTopic, rf, sizes)...)
		} else {
			parts = append(parts, spreadAssignment(brokers, []string{topic}, perTopic, rf, sizes, r)...)
		}
	}
	if seed%3 == 1 {
		// Topic 0 tiers: a new replica copies a tenth of a replica's
		// local size, and nine times that stays in remote storage. Set
		// without drawing from r, so that every case is what it was.
		for k := range parts {
			if p := &parts[k]; p.Topic == "topic-0" && p.SizeBytes >= 10 {
				p.CopyBytes, p.RemoteBytes = p.SizeBytes/10, 9*p.SizeBytes
			}
		}
	}
	rc := randomCase{c: engine.Cluster{Brokers: brokers, Partitions: parts}}
	var total int64
	hosted := map[int32]int64{}
	for _, p := range parts {
		for _, b := range p.Replicas {
			total += p.SizeBytes
			hosted[b] += p.SizeBytes
		}
	}
	rc.known = r.Intn(2) == 0
	if rc.known {
		// Between 1.3 and 4 times an even share, plus some other data.
		for k := range rc.c.Brokers {
			b := &rc.c.Brokers[k]
			share := total / int64(nb)
			b.CapacityBytes = share + share*int64(3+r.Intn(28))/10 + 1<<20
			b.UsedBytes = hosted[b.ID] + int64(r.Intn(1<<20))
		}
	}
	rc.o = engine.Options{
		MaxMovesPerStep:             1 + r.Intn(10),
		MaxMovesPerBroker:           1 + r.Intn(4),
		MaxReplicaMovesPerPartition: 1 + r.Intn(2),
		MinFreeDiskPercent:          float64(r.Intn(30)),
		ThrottleBytesPerSec:         int64(1+r.Intn(100)) << 20,
	}
	if twoDims {
		rc.o.Awareness = engine.Awareness{Separator: "/", Dimensions: []string{"zone", "rack"}}
	}
	newBroker := func(k int) engine.Broker {
		b := engine.Broker{ID: int32(1000 + k), Rack: rackName(), Alive: true}
		if rc.known {
			b.CapacityBytes = rc.c.Brokers[0].CapacityBytes
		}
		return b
	}
	switch r.Intn(4) {
	case 0:
		rc.kind = "rebalance"
	case 1:
		rc.kind = "add"
		for k := range 1 + r.Intn(3) {
			rc.ch.AddBrokers = append(rc.ch.AddBrokers, newBroker(k))
		}
	case 2:
		rc.kind = "remove"
		for _, k := range r.Perm(nb)[:1+r.Intn(min(2, nb-1))] {
			rc.ch.RemoveBrokers = append(rc.ch.RemoveBrokers, brokers[k].ID)
		}
	case 3:
		rc.kind = "rf"
		rc.ch.ReplicationFactor = map[string]int{"topic-0": 1 + r.Intn(min(3, nb))}
	}
	return rc
}

// checkPlan asserts what must hold of every plan, reading only the input and
// the plan.
func checkPlan(t *testing.T, rc randomCase, p *engine.Plan) {
	t.Helper()
	removed := map[int32]bool{}
	for _, id := range rc.ch.RemoveBrokers {
		removed[id] = true
	}
	all := append(slices.Clone(rc.c.Brokers), rc.ch.AddBrokers...)
	receiving := map[int32]bool{}
	for _, b := range all {
		receiving[b.ID] = b.Alive && !removed[b.ID]
	}
	before := map[string][]int32{}
	for _, part := range rc.c.Partitions {
		before[fmt.Sprintf("%s/%d", part.Topic, part.Partition)] = part.Replicas
	}
	for _, part := range p.Target {
		old := before[fmt.Sprintf("%s/%d", part.Topic, part.Partition)]
		rf, changed := rc.ch.ReplicationFactor[part.Topic]
		if !changed {
			rf = len(old)
		}
		if len(part.Replicas) != rf {
			t.Fatalf("%s p%d has %d replicas, want %d", part.Topic, part.Partition, len(part.Replicas), rf)
		}
		for _, b := range part.Replicas {
			// An offline broker that stays keeps what it had, nothing more.
			if !receiving[b] && (removed[b] || !slices.Contains(old, b)) {
				t.Fatalf("%s p%d has a replica on broker %d, which cannot hold one", part.Topic, part.Partition, b)
			}
		}
	}
	// A partition whose replicas are all offline has nothing to copy from;
	// the plan leaves it (and warns).
	alive := map[int32]bool{}
	for _, b := range all {
		alive[b.ID] = b.Alive
	}
	movable := slices.DeleteFunc(slices.Clone(p.Target), func(part engine.Partition) bool {
		return !slices.ContainsFunc(before[fmt.Sprintf("%s/%d", part.Topic, part.Partition)], func(b int32) bool { return alive[b] })
	})
	if probs := spreadProblems(all, receiving, movable, rc.o.Awareness); len(probs) > 0 {
		t.Fatalf("spread: %v", probs[:min(3, len(probs))])
	}
	simulate(t, rc.c, rc.ch, rc.o, p)
	if p.Score.ReplicasOutOfRange == 0 && p.ReplicaMoves < p.Score.LowerBound {
		t.Fatalf("%d moves beat the lower bound %d: the bound is wrong", p.ReplicaMoves, p.Score.LowerBound)
	}
	if got := movesCount(rc.c.Partitions, p.Target); got != p.ReplicaMoves {
		t.Fatalf("plan counts %d moves, the target needs %d", p.ReplicaMoves, got)
	}
	s, err := engine.ScoreAssignment(rc.c, rc.ch, p.Target, rc.o)
	if err != nil {
		t.Fatalf("ScoreAssignment: %v", err)
	}
	if s != p.Score {
		t.Fatalf("ScoreAssignment %+v differs from the plan's %+v", s, p.Score)
	}
}

func oneRack(rc randomCase) bool {
	racks := map[string]bool{}
	for _, b := range append(slices.Clone(rc.c.Brokers), rc.ch.AddBrokers...) {
		racks[b.Rack] = true
	}
	return len(racks) == 1
}

// checkBalanced asserts that replicas and preferred leaders are within their
// ranges, or that no chain of moves could improve them (the racks forbid).
func checkBalanced(t *testing.T, c engine.Cluster, ch engine.Change, o engine.Options, p *engine.Plan) {
	t.Helper()
	all := append(slices.Clone(c.Brokers), ch.AddBrokers...)
	removed := map[int32]bool{}
	for _, id := range ch.RemoveBrokers {
		removed[id] = true
	}
	receiving := map[int32]bool{}
	repRng := map[int32]engine.Range{}
	leadRng := map[int32]engine.Range{}
	for _, b := range all {
		receiving[b.ID] = b.Alive && !removed[b.ID]
	}
	for _, bp := range p.Brokers {
		repRng[bp.Broker] = bp.TargetReplicas
		leadRng[bp.Broker] = bp.TargetLeaders
	}
	if p.Score.ReplicasOutOfRange > 0 {
		if why := improvingChain(all, receiving, p.Target, repRng, o.Awareness); why != "" {
			t.Fatalf("%d replicas out of range, and %s", p.Score.ReplicasOutOfRange, why)
		}
	}
	if p.Score.LeadersOutOfRange > 0 {
		if why := improvingLeaderChain(receiving, p.Target, leadRng); why != "" {
			t.Fatalf("%d leaders out of range, and %s", p.Score.LeadersOutOfRange, why)
		}
	}
}

// TestPropertyRandomClusters plans many random clusters (seeded, so any
// failure reproduces) and checks disk safety at every group, rack spread,
// the chain of moves, balance and minimal movement.
func TestPropertyRandomClusters(t *testing.T) {
	const seeds = 400
	var planned, refused, balanced, addMinimal int
	ratios := 0.0
	for seed := range int64(seeds) {
		rc := newRandomCase(seed)
		t.Run(fmt.Sprintf("seed%d-%s", seed, rc.kind), func(t *testing.T) {
			p, err := engine.PlanReassignment(rc.c, rc.ch, rc.o)
			if err != nil {
				var in *engine.InputError
				var inf *engine.InfeasibleError
				if !errors.As(err, &in) && !errors.As(err, &inf) {
					t.Fatalf("error of unexpected type %T: %v", err, err)
				}
				refused++
				return
			}
			planned++
			checkPlan(t, rc, p)
			ratios += p.Score.MoveRatio
			// Without disk limits every broker ends balanced, or, where the
			// racks tie some brokers together so that the ranges cannot all
			// be met, no chain of moves could bring one closer.
			if !rc.known {
				checkBalanced(t, rc.c, rc.ch, rc.o, p)
				balanced++
			}
			// A scale-out of a cluster the planner balanced moves exactly the
			// lower bound, and only onto new brokers, where the racks do not
			// constrain which broker may give a replica to which.
			if rc.kind == "add" && !rc.known && oneRack(rc) {
				start := mustPlan(t, rc.c, engine.Change{}, rc.o)
				c2 := engine.Cluster{Brokers: rc.c.Brokers, Partitions: start.Target}
				p2 := mustPlan(t, c2, rc.ch, rc.o)
				checkPlan(t, randomCase{c: c2, ch: rc.ch, o: rc.o}, p2)
				checkBalanced(t, c2, rc.ch, rc.o, p2)
				if p2.ReplicaMoves != p2.Score.LowerBound {
					t.Fatalf("scale-out of a balanced cluster: %d moves, bound %d", p2.ReplicaMoves, p2.Score.LowerBound)
				}
				newIDs := ids(rc.ch.AddBrokers)
				p2.Moves().Each(func(m engine.Move) {
					for _, b := range m.Adding {
						if !slices.Contains(newIDs, b) {
							t.Fatalf("scale-out move %+v lands on old broker %d", m, b)
						}
					}
				})
				addMinimal++
			}
		})
	}
	t.Logf("%d seeds: %d planned (%d checked for balance, %d scale-outs checked for minimal moves), %d refused; mean moves/bound %.3f",
		seeds, planned, balanced, addMinimal, refused, ratios/float64(max(1, planned)))
	if planned < seeds/2 {
		t.Fatalf("only %d of %d random cases planned; the generator is too harsh to test much", planned, seeds)
	}
}

// TestDeterministic: the same input in any order gives a byte-identical plan.
func TestDeterministic(t *testing.T) {
	for seed := range int64(40) {
		rc := newRandomCase(seed)
		a, errA := engine.PlanReassignment(rc.c, rc.ch, rc.o)
		r := rand.New(rand.NewSource(seed))
		shuffled := rc.c
		shuffled.Brokers = slices.Clone(rc.c.Brokers)
		shuffled.Partitions = slices.Clone(rc.c.Partitions)
		r.Shuffle(len(shuffled.Brokers), func(i, j int) { shuffled.Brokers[i], shuffled.Brokers[j] = shuffled.Brokers[j], shuffled.Brokers[i] })
		r.Shuffle(len(shuffled.Partitions), func(i, j int) {
			shuffled.Partitions[i], shuffled.Partitions[j] = shuffled.Partitions[j], shuffled.Partitions[i]
		})
		b, errB := engine.PlanReassignment(shuffled, rc.ch, rc.o)
		if (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()) {
			t.Fatalf("seed %d: errors differ: %v / %v", seed, errA, errB)
		}
		if errA != nil {
			continue
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("seed %d: plans differ with the input shuffled", seed)
		}
	}
}

// TestPropertyScaleOutMinimal: scale-outs of random balanced clusters whose
// layout has a closed-form lower bound (one rack; RF equal to the number of
// racks; or fewer replicas than equal racks) move exactly that bound, every
// move onto a new broker, and end balanced.
func TestPropertyScaleOutMinimal(t *testing.T) {
	for seed := range int64(150) {
		r := rand.New(rand.NewSource(seed))
		var racks []string
		var rf, perRack int
		switch r.Intn(3) {
		case 0:
			racks, rf, perRack = []string{""}, 1+r.Intn(3), 3+r.Intn(8)
		case 1:
			n := 2 + r.Intn(3)
			for k := range n {
				racks = append(racks, fmt.Sprintf("r%d", k))
			}
			rf, perRack = n, 1+r.Intn(4)
		case 2:
			n := 3 + r.Intn(2)
			for k := range n {
				racks = append(racks, fmt.Sprintf("r%d", k))
			}
			rf, perRack = 1+r.Intn(n-1), 1+r.Intn(4)
		}
		old := brokersWithRacks(1, rackList(perRack*len(racks), racks...), 0)
		// New brokers: whole rows over all racks keep racks equal; with RF
		// equal to the racks, any rack may grow.
		var newRacks []string
		if len(racks) > 1 && rf == len(racks) && r.Intn(2) == 0 {
			for range 1 + r.Intn(4) {
				newRacks = append(newRacks, racks[r.Intn(len(racks))])
			}
		} else {
			newRacks = rackList(len(racks)*(1+r.Intn(2)), racks...)
		}
		sizes := uniformSizes(1 << 20)
		if r.Intn(2) == 0 {
			sizes = zipfSizes(1.3, 300)
		}
		parts := spreadAssignment(old, topicNames(1+r.Intn(4)), 10+r.Intn(60), rf, sizes, r)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			c := balancedStart(t, old, parts)
			add := brokersWithRacks(1000, newRacks, 0)
			ch := engine.Change{AddBrokers: add}
			o := engine.DefaultOptions()
			p := mustPlan(t, c, ch, o)
			want := scaleOutBound(c, ch)
			if p.ReplicaMoves != want || movesCount(c.Partitions, p.Target) != want {
				t.Fatalf("racks %v + %v, rf %d: %d moves, independent bound %d (plan's bound %d)", racks, newRacks, rf, p.ReplicaMoves, want, p.Score.LowerBound)
			}
			newIDs := ids(add)
			p.Moves().Each(func(m engine.Move) {
				for _, b := range m.Adding {
					if !slices.Contains(newIDs, b) {
						t.Fatalf("move %+v lands on old broker %d", m, b)
					}
				}
			})
			checkPlan(t, randomCase{c: c, ch: ch, o: o}, p)
			if p.Score.ReplicasOutOfRange != 0 || p.Score.LeadersOutOfRange != 0 {
				t.Fatalf("not balanced: %+v", p.Score)
			}
		})
	}
}
