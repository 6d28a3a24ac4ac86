package engine_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// sizeFunc gives partition sizes in bytes.
type sizeFunc func(r *rand.Rand, p int) int64

func uniformSizes(size int64) sizeFunc {
	return func(*rand.Rand, int) int64 { return size }
}

// zipfSizes draws sizes from a Zipf law: most partitions are small, a few are
// hundreds of times larger. s and imax set the skew and the largest size, in
// units of one MiB.
func zipfSizes(s float64, imax uint64) sizeFunc {
	var z *rand.Zipf
	var zr *rand.Rand
	return func(r *rand.Rand, _ int) int64 {
		if z == nil || zr != r {
			z, zr = rand.NewZipf(r, s, 1, imax), r
		}
		return int64(z.Uint64()+1) << 20
	}
}

// rackList names the rack of broker k (0-based) round robin over racks.
func rackList(n int, racks ...string) []string {
	out := make([]string, n)
	for k := range out {
		out[k] = racks[k%len(racks)]
	}
	return out
}

// brokersWithRacks builds alive brokers with ids first, first+1, ... and the
// given racks.
func brokersWithRacks(first int32, racks []string, capacity int64) []engine.Broker {
	bs := make([]engine.Broker, len(racks))
	for k, r := range racks {
		bs[k] = engine.Broker{ID: first + int32(k), Rack: r, Alive: true, CapacityBytes: capacity}
	}
	return bs
}

// spreadAssignment places partitions the way a rack-aware tool would, with
// no help from the planner: each partition takes rf distinct racks in turn
// (all racks, once rf exceeds them), and inside a rack the broker with the
// fewest replicas, then leaders, then lowest id. Leaders rotate over racks.
// The result is spread, balanced inside each rack, and deterministic.
func spreadAssignment(brokers []engine.Broker, topics []string, perTopic, rf int, sizes sizeFunc, r *rand.Rand) []engine.Partition {
	byRack := map[string][]int{}
	var rackNames []string
	for k, b := range brokers {
		if _, ok := byRack[b.Rack]; !ok {
			rackNames = append(rackNames, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], k)
	}
	slices.Sort(rackNames)
	count := make([]int, len(brokers))
	leads := make([]int, len(brokers))
	var out []engine.Partition
	n := 0
	for _, t := range topics {
		for p := range perTopic {
			var reps []int32
			var used []int
			for j := range rf {
				rack := rackNames[(n+j)%len(rackNames)]
				best := -1
				for _, k := range byRack[rack] {
					if slices.Contains(used, k) {
						continue
					}
					if best < 0 || count[k] < count[best] || (count[k] == count[best] && j == 0 && leads[k] < leads[best]) {
						best = k
					}
				}
				if best < 0 { // rack exhausted: any broker
					for k := range brokers {
						if !slices.Contains(used, k) && (best < 0 || count[k] < count[best]) {
							best = k
						}
					}
				}
				used = append(used, best)
				count[best]++
				if j == 0 {
					leads[best]++
				}
				reps = append(reps, brokers[best].ID)
			}
			out = append(out, engine.Partition{Topic: t, Partition: int32(p), Replicas: reps, SizeBytes: sizes(r, n)})
			n++
		}
	}
	return out
}

func topicNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%02d", i)
	}
	return out
}

func mustPlan(t testing.TB, c engine.Cluster, ch engine.Change, o engine.Options) *engine.Plan {
	t.Helper()
	p, err := engine.PlanReassignment(c, ch, o)
	if err != nil {
		t.Fatalf("PlanReassignment: %v", err)
	}
	return p
}

// ---- Independent checks. They read only the plan and the input. ----

// brokerCounts counts replicas and first replicas per broker.
func brokerCounts(parts []engine.Partition) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, p := range parts {
		for k, b := range p.Replicas {
			replicas[b]++
			if k == 0 {
				leaders[b]++
			}
		}
	}
	return replicas, leaders
}

// spreadProblems lists partitions of target that use fewer distinct values
// of some dimension than min(RF, values available on the receiving brokers).
func spreadProblems(brokers []engine.Broker, receiving map[int32]bool, target []engine.Partition, a engine.Awareness) []string {
	dims := max(1, len(a.Dimensions))
	rackByID := map[int32][]string{}
	avail := make([]map[string]bool, dims)
	for d := range avail {
		avail[d] = map[string]bool{}
	}
	for _, b := range brokers {
		vs := a.RackValues(b.Rack)
		rackByID[b.ID] = vs
		if receiving[b.ID] {
			for d, v := range vs {
				avail[d][v] = true
			}
		}
	}
	var out []string
	for _, p := range target {
		for d := range dims {
			seen := map[string]bool{}
			for _, b := range p.Replicas {
				seen[rackByID[b][d]] = true
			}
			if need := min(len(p.Replicas), len(avail[d])); len(seen) < need {
				out = append(out, fmt.Sprintf("%s p%d %v: %d distinct values of dimension %d, want %d", p.Topic, p.Partition, p.Replicas, len(seen), d, need))
			}
		}
	}
	return out
}

// simulate replays the plan's groups from the input and checks, without the
// planner's help: each move starts from the partition's list as it stands;
// at most one move per partition per group; at most maxPerBroker moves touch
// a broker in a group; with both copies of every move in flight counted, no
// receiving broker exceeds capacity × (1 − minFree/100); and the last lists
// equal the target. It returns the highest use seen per broker.
func simulate(t testing.TB, c engine.Cluster, ch engine.Change, o engine.Options, plan *engine.Plan) map[int32]int64 {
	t.Helper()
	dm := newDiskModel(c, ch, o)
	usage, lists, sizes, copies, limit := dm.usage, dm.lists, dm.sizes, dm.copies, dm.limit
	key := partKey
	peak := map[int32]int64{}
	for id, u := range usage {
		peak[id] = u
	}
	perBroker := o.MaxMovesPerBroker
	if perBroker == 0 {
		perBroker = engine.DefaultMaxMovesPerBroker
	}
	perStep := o.MaxMovesPerStep
	if perStep == 0 {
		perStep = engine.DefaultMaxMovesPerStep
	}
	perPart := o.MaxReplicaMovesPerPartition
	if perPart == 0 {
		perPart = 1
	}
	for gi, g := range plan.Groups {
		inGroup := map[string]bool{}
		touches := map[int32]int{}
		incoming := map[int32]int64{}
		outgoing := map[int32]int64{}
		for _, st := range g.Steps {
			if len(st.Moves) == 0 || len(st.Moves) > perStep {
				t.Fatalf("group %d: step with %d moves (max %d)", gi, len(st.Moves), perStep)
			}
			for _, m := range st.Moves {
				k := key(m.Topic, m.Partition)
				if inGroup[k] {
					t.Fatalf("group %d: %s moves twice", gi, k)
				}
				inGroup[k] = true
				if !slices.Equal(lists[k], m.OldReplicas) {
					t.Fatalf("group %d: %s old replicas %v, but the list is %v", gi, k, m.OldReplicas, lists[k])
				}
				var adding, removing []int32
				for _, b := range m.NewReplicas {
					if !slices.Contains(m.OldReplicas, b) {
						adding = append(adding, b)
					}
				}
				for _, b := range m.OldReplicas {
					if !slices.Contains(m.NewReplicas, b) {
						removing = append(removing, b)
					}
				}
				if !slices.Equal(adding, m.Adding) || !slices.Equal(removing, m.Removing) {
					t.Fatalf("group %d: %s adding %v removing %v, but lists say %v and %v", gi, k, m.Adding, m.Removing, adding, removing)
				}
				if len(adding) > perPart || len(removing) > perPart {
					t.Fatalf("group %d: %s changes %d/%d replicas at once (max %d)", gi, k, len(adding), len(removing), perPart)
				}
				if m.Bytes != copies[k]*int64(len(adding)) {
					t.Fatalf("group %d: %s bytes %d, want %d", gi, k, m.Bytes, copies[k]*int64(len(adding)))
				}
				// A new replica takes what it copies; a removed one frees
				// the partition's size.
				for _, b := range adding {
					touches[b]++
					incoming[b] += copies[k]
				}
				for _, b := range removing {
					touches[b]++
					outgoing[b] += sizes[k]
				}
				lists[k] = slices.Clone(m.NewReplicas)
			}
		}
		for b, n := range touches {
			if n > perBroker {
				t.Fatalf("group %d: %d moves touch broker %d (max %d)", gi, n, b, perBroker)
			}
		}
		for b, in := range incoming {
			use := usage[b] + in
			peak[b] = max(peak[b], use)
			if l, ok := limit(b); ok && use > l {
				t.Fatalf("group %d: broker %d would hold %d bytes with both copies in flight, limit %d", gi, b, use, l)
			}
		}
		for b, in := range incoming {
			usage[b] += in
		}
		for b, out := range outgoing {
			usage[b] -= out
		}
	}
	for _, p := range plan.Target {
		k := key(p.Topic, p.Partition)
		if !slices.Equal(p.Replicas, lists[k]) {
			// Only the order may differ, and then a reorder must say so.
			if !engine.SameMembers(p.Replicas, lists[k]) {
				t.Fatalf("%s: target %v, but the moves end at %v", k, p.Replicas, lists[k])
			}
			found := false
			for _, r := range plan.Reorders {
				if key(r.Topic, r.Partition) == k && slices.Equal(r.NewReplicas, p.Replicas) && slices.Equal(r.OldReplicas, lists[k]) {
					found = true
				}
			}
			if !found {
				t.Fatalf("%s: target %v differs in order from %v and no reorder says so", k, p.Replicas, lists[k])
			}
		}
	}
	if len(plan.Target) != len(c.Partitions) {
		t.Fatalf("target has %d partitions, input %d", len(plan.Target), len(c.Partitions))
	}
	return peak
}

// diskModel is what the disk checks of a plan start from: each broker's
// use (its used bytes, at least what its replicas explain), each
// partition's list, size and copy (what a new replica copies: its
// CopyBytes, or its size) by partKey, and each broker's limit,
// capacity × (1 − minFree/100), where its capacity is known.
type diskModel struct {
	usage    map[int32]int64
	capacity map[int32]int64
	lists    map[string][]int32
	sizes    map[string]int64
	copies   map[string]int64
	minFree  float64
}

func partKey(topic string, p int32) string { return fmt.Sprintf("%s/%d", topic, p) }

func newDiskModel(c engine.Cluster, ch engine.Change, o engine.Options) *diskModel {
	dm := &diskModel{usage: map[int32]int64{}, capacity: map[int32]int64{}, lists: map[string][]int32{}, sizes: map[string]int64{},
		copies: map[string]int64{}, minFree: o.MinFreeDiskPercent}
	for _, b := range append(slices.Clone(c.Brokers), ch.AddBrokers...) {
		dm.capacity[b.ID] = b.CapacityBytes
		dm.usage[b.ID] = b.UsedBytes
	}
	explained := map[int32]int64{}
	for _, p := range c.Partitions {
		dm.lists[partKey(p.Topic, p.Partition)] = slices.Clone(p.Replicas)
		dm.sizes[partKey(p.Topic, p.Partition)] = p.SizeBytes
		dm.copies[partKey(p.Topic, p.Partition)] = p.SizeBytes
		if p.CopyBytes > 0 && p.CopyBytes < p.SizeBytes {
			dm.copies[partKey(p.Topic, p.Partition)] = p.CopyBytes
		}
		for _, b := range p.Replicas {
			explained[b] += p.SizeBytes
		}
	}
	for id := range dm.usage {
		dm.usage[id] = max(dm.usage[id], explained[id])
	}
	return dm
}

func (dm *diskModel) limit(id int32) (int64, bool) {
	cp := dm.capacity[id]
	if cp == 0 {
		return 0, false
	}
	return cp - int64(math.Ceil(float64(cp)*(dm.minFree/100))), true
}

// eachRandomPlan plans the random cases of seeds 0 to seeds-1 and calls fn
// with each that plans; a case refused must be refused with an input or an
// infeasibility error.
func eachRandomPlan(t *testing.T, seeds int64, fn func(seed int64, rc randomCase, p *engine.Plan)) {
	t.Helper()
	for seed := range seeds {
		rc := newRandomCase(seed)
		p, err := engine.PlanReassignment(rc.c, rc.ch, rc.o)
		if err != nil {
			var in *engine.InputError
			var inf *engine.InfeasibleError
			if !errors.As(err, &in) && !errors.As(err, &inf) {
				t.Fatalf("seed %d: error of unexpected type %T: %v", seed, err, err)
			}
			continue
		}
		fn(seed, rc, p)
	}
}

// movesCount counts replicas that a target adds to the input's lists.
func movesCount(before, target []engine.Partition) int {
	idx := map[string][]int32{}
	for _, p := range before {
		idx[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = p.Replicas
	}
	n := 0
	for _, p := range target {
		old := idx[fmt.Sprintf("%s/%d", p.Topic, p.Partition)]
		for _, b := range p.Replicas {
			if !slices.Contains(old, b) {
				n++
			}
		}
	}
	return n
}

// spreadOf is max − min of a per-broker count over the given brokers.
func spreadOf(counts map[int32]int, ids []int32) (lo, hi int) {
	for k, id := range ids {
		n := counts[id]
		if k == 0 || n < lo {
			lo = n
		}
		if k == 0 || n > hi {
			hi = n
		}
	}
	return lo, hi
}

func ids(bs []engine.Broker) []int32 {
	out := make([]int32, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

// byteSkew is the largest |bytes − mean| / mean over the brokers, in percent.
func byteSkew(target []engine.Partition, brokers []int32) float64 {
	bytes := map[int32]int64{}
	var total int64
	for _, p := range target {
		for _, b := range p.Replicas {
			bytes[b] += p.SizeBytes
			total += p.SizeBytes
		}
	}
	mean := float64(total) / float64(len(brokers))
	worst := 0.0
	for _, b := range brokers {
		d := (float64(bytes[b]) - mean) / mean * 100
		worst = max(worst, d, -d)
	}
	return worst
}

// improvingChain looks, without the planner's help, for a way to bring a
// broker closer to its range that the plan missed: a sequence of single
// replica moves (each keeping its partition spread) from a broker above its
// range to one with room or at least two fewer replicas, or into a broker
// below its range from one above its minimum or with at least two more. It
// returns a description of the first it finds, or "". Disk limits are not
// considered; use it on clusters of unknown capacity.
func improvingChain(brokers []engine.Broker, receiving map[int32]bool, target []engine.Partition, rng map[int32]engine.Range, a engine.Awareness) string {
	count, _ := brokerCounts(target)
	dims := max(1, len(a.Dimensions))
	vals := map[int32][]string{}
	avail := make([]map[string]bool, dims)
	for d := range avail {
		avail[d] = map[string]bool{}
	}
	var ids []int32
	for _, b := range brokers {
		vals[b.ID] = a.RackValues(b.Rack)
		if receiving[b.ID] {
			ids = append(ids, b.ID)
			for d, v := range vals[b.ID] {
				avail[d][v] = true
			}
		}
	}
	slices.Sort(ids)
	spreadAfter := func(reps []int32, from, to int32) bool {
		for d := range dims {
			seen := map[string]bool{}
			for _, r := range reps {
				if r == from {
					r = to
				}
				seen[vals[r][d]] = true
			}
			if len(seen) < min(len(reps), len(avail[d])) {
				return false
			}
		}
		return true
	}
	// moves[w] lists the brokers w can pass a replica to.
	next := map[int32]map[int32]bool{}
	for _, p := range target {
		for _, w := range p.Replicas {
			for _, b := range ids {
				if !slices.Contains(p.Replicas, b) && spreadAfter(p.Replicas, w, b) {
					if next[w] == nil {
						next[w] = map[int32]bool{}
					}
					next[w][b] = true
				}
			}
		}
	}
	return chainFinding(ids, next, count, rng, "holds", "pass one on to")
}

// improvingLeaderChain is improvingChain for preferred leaders: leadership
// passes from the leader of a partition to another of its replicas.
func improvingLeaderChain(receiving map[int32]bool, target []engine.Partition, rng map[int32]engine.Range) string {
	_, lead := brokerCounts(target)
	next := map[int32]map[int32]bool{}
	var ids []int32
	for id, ok := range receiving {
		if ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, p := range target {
		for _, b := range p.Replicas[1:] {
			if receiving[b] {
				if next[p.Replicas[0]] == nil {
					next[p.Replicas[0]] = map[int32]bool{}
				}
				next[p.Replicas[0]][b] = true
			}
		}
	}
	return chainFinding(ids, next, lead, rng, "leads", "pass one to")
}

// chainFinding looks, over the moves next allows (next[from][to]), for a
// broker above its range that can pass one along a chain to a broker with
// room, or a broker below its range that some chain can feed: either means
// the target was not as balanced as it could be. holds and pass word the
// finding.
func chainFinding(ids []int32, next map[int32]map[int32]bool, count map[int32]int, rng map[int32]engine.Range, holds, pass string) string {
	reach := func(from int32, goal func(int32) bool) int32 {
		seen := map[int32]bool{from: true}
		queue := []int32{from}
		for len(queue) > 0 {
			w := queue[0]
			queue = queue[1:]
			for _, b := range ids {
				if next[w][b] && !seen[b] {
					if goal(b) {
						return b
					}
					seen[b] = true
					queue = append(queue, b)
				}
			}
		}
		return -1
	}
	for _, u := range ids {
		if count[u] > rng[u].Max {
			if b := reach(u, func(b int32) bool { return count[b] < rng[b].Max || count[b] <= count[u]-2 }); b >= 0 {
				return fmt.Sprintf("broker %d %s %d (range %+v) and can %s broker %d (%d, range %+v)", u, holds, count[u], rng[u], pass, b, count[b], rng[b])
			}
		}
		if count[u] < rng[u].Min {
			for _, g := range ids {
				if g != u && (count[g] > rng[g].Min || count[g] >= count[u]+2) && reach(g, func(b int32) bool { return b == u }) == u {
					return fmt.Sprintf("broker %d %s %d (range %+v) and can get one from broker %d (%d, range %+v)", u, holds, count[u], rng[u], g, count[g], rng[g])
				}
			}
		}
	}
	return ""
}
