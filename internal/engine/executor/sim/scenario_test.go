package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// What a seed runs: a cluster, one operation (sometimes a second one,
// started by another process at the same moment), runs with faults, then
// runs without faults until each operation has finished.

type opKind int

const (
	opScaleOut opKind = iota
	opScaleIn
	opScaleInNamed
	opReplaceDead
	opRFUp
	opRFDown
	opGrow
	opRebalance
	opCancelRevert
	opRunLimit // a flag on any of the others: every run has a time budget
	// opReplaceReuse: a replace-dead whose platform brings the dead
	// broker back under its id.
	opReplaceReuse
	opKinds
)

var opNames = [opKinds]string{"scale-out", "scale-in", "scale-in-named", "replace-dead", "rf-up", "rf-down", "grow", "rebalance", "cancel-revert", "run-limit", "replace-reuse"}

// job is one operation a process runs, and how to tell it reached its
// goal.
type job struct {
	name string
	// run calls the entry point once; it reports whether the run ended
	// paused or with nothing done yet.
	run func(ctx context.Context, ex *executor.Executor) (paused bool, err error)
	// goal says what is missing ("" when reached); read under the
	// scheduler.
	goal   func() string
	maxRun time.Duration
	// tries is how many applies with faults it gets (0: faultyRuns).
	tries int
	// lane is the process's working directory: 1, or 2 for a second
	// process running at the same time.
	lane int
	// succeeded: an apply returned without error, so Terraform recorded
	// the state; the provider then no longer names the brokers removed.
	succeeded bool
	// refused: the entry point refused it as infeasible, having changed
	// nothing (apply).
	refused bool
}

const (
	clusterKey   = "cluster/sim"
	faultyRuns   = 4
	cleanRuns    = 12
	shortRun     = 40 * time.Second
	mib          = 1 << 20
	throttleRate = 16 * mib
)

func opts() engine.Options {
	o := engine.DefaultOptions()
	o.MaxMovesPerStep = 4
	return o
}

// build draws the cluster: 4 to 6 brokers over 2 or 3 racks, three topics
// placed as Kafka's controller would, disks about a third full. For a
// rebalance the last broker joins empty.
func (w *world) build(rng *rand.Rand, kind opKind) {
	m := w.m
	m.racks = []string{"r1", "r2", "r3"}[:2+rng.IntN(2)]
	n := 4 + rng.IntN(3)
	m.noCordon = rng.IntN(5) == 0
	for i := 0; i < n; i++ {
		m.addBroker(m.racks[i%len(m.racks)])
	}
	placeOn := m.snapshot()
	if kind == opRebalance {
		placeOn.Brokers = placeOn.Brokers[:n-1]
	}
	var total int64
	for t := 0; t < 3; t++ {
		topic := fmt.Sprintf("t%d", t)
		rf := 2 + rng.IntN(2)
		switch {
		case t == 0 && kind == opRFUp:
			rf = 2
		case t == 0 && kind == opRFDown:
			rf = 3
		}
		ps, err := engine.PlacePartitions(placeOn, topic, 3+rng.IntN(4), rf, opts())
		if err != nil {
			panic(err)
		}
		m.rf[topic] = rf
		for _, p := range ps {
			part := &partition{key: partKey{topic, p.Partition}, replicas: p.Replicas, size: int64(1+rng.IntN(64)) * mib * w.prof.sizeFactor}
			total += part.size * int64(rf)
			m.addPartition(part)
			m.elect(part)
		}
		placeOn.Partitions = append(placeOn.Partitions, ps...)
	}
	// A third full when spread over n-1 brokers: room for a drain and a
	// higher replication factor within the planner's free-disk margin.
	m.capacity = total * 3 / int64(n-1)
	for _, b := range m.brokers {
		b.capacity = m.capacity
	}
}

// scenario draws the operation(s) of the seed.
func (w *world) scenario(rng *rand.Rand) []*job {
	kind := opKind(rng.IntN(int(opRunLimit)))
	w.build(rng, kind)
	w.stats.op(kind)
	var maxRun time.Duration
	if rng.IntN(5) == 0 {
		w.stats.op(opRunLimit)
		maxRun = shortRun
	}
	n := len(w.m.registered())
	if w.prof.demote {
		regs := w.m.registered()
		w.demoted = []int32{regs[rng.IntN(len(regs))].id}
	}
	var jobs []*job
	switch kind {
	case opScaleOut:
		jobs = append(jobs, w.scaleJob(n+1+rng.IntN(2), nil, false))
	case opScaleIn:
		jobs = append(jobs, w.scaleJob(n-1, nil, false))
	case opScaleInNamed:
		jobs = append(jobs, w.scaleJob(n-1, []int32{int32(1 + rng.IntN(n))}, false))
	case opReplaceDead:
		b := w.m.brokers[int32(1+rng.IntN(n))]
		w.m.kill(b)
		b.doomed = true
		if w.reuse = rng.IntN(2) == 0; w.reuse {
			w.stats.op(opReplaceReuse)
		}
		jobs = append(jobs, w.scaleJob(n, []int32{b.id}, false))
	case opRFUp:
		jobs = append(jobs, w.rfJob("t0", 3))
	case opRFDown:
		jobs = append(jobs, w.rfJob("t0", 2))
	case opGrow:
		jobs = append(jobs, w.growJob("t0", len(w.m.topicParts("t0"))+1+rng.IntN(3)))
	case opRebalance:
		jobs = append(jobs, w.scaleJob(n, nil, true))
	case opCancelRevert:
		// The scale-out runs with a budget that pauses it after its first
		// group; the next apply asks for the count it started from.
		first := w.scaleJob(n+1, nil, false)
		first.maxRun, first.tries = time.Nanosecond, 1
		jobs = append(jobs, first, w.scaleJob(n, nil, false))
	}
	for _, j := range jobs {
		j.lane = 1
		if j.maxRun == 0 {
			j.maxRun = maxRun
		}
	}
	return jobs
}

// secondJob is another process's operation on another topic.
func (w *world) secondJob(rng *rand.Rand) *job {
	var j *job
	if rng.IntN(2) == 0 {
		j = w.growJob("t1", len(w.m.topicParts("t1"))+1)
	} else {
		j = w.rfJob("t1", 5-w.m.rf["t1"])
	}
	j.lane = 2
	return j
}

func (w *world) scaleJob(count int, remove []int32, keepBalanced bool) *job {
	req := executor.ScaleRequest{Key: clusterKey, ID: fmt.Sprintf("scale-%d", count), TargetBrokerCount: count, RemoveBrokers: remove,
		Options: opts(), InitialThrottle: throttleRate, Resource: "cluster", ScalingMethod: "sim"}
	if keepBalanced {
		req.ID, req.Balance = "rebalance", executor.BalanceAll
	}
	if len(w.demoted) > 0 {
		req.Options.DemotedBrokers = w.demoted
		if !keepBalanced {
			req.Balance = executor.BalanceLeaders
		}
	}
	j := &job{name: fmt.Sprintf("Scale to %d brokers (remove %v, keep balanced %v)", count, remove, keepBalanced)}
	w.clusterJob = j
	j.run = func(ctx context.Context, ex *executor.Executor) (bool, error) {
		r := req
		if j.succeeded {
			r.RemoveBrokers = nil
		}
		op, err := ex.Scale(ctx, r)
		return op != nil && op.Paused(), err
	}
	j.goal = func() string {
		regs := w.m.registered()
		for _, b := range regs {
			if !b.running || (slices.Contains(remove, b.id) && !w.reuse) {
				return fmt.Sprintf("broker %d is registered (running %v)", b.id, b.running)
			}
		}
		if len(regs) != count {
			return fmt.Sprintf("%d brokers registered, want %d", len(regs), count)
		}
		return w.unfinished(clusterKey)
	}
	return j
}

func (w *world) rfJob(topic string, rf int) *job {
	key := "topic/" + topic
	w.m.rf[topic] = rf
	return &job{
		name: fmt.Sprintf("change topic %s to %d replicas", topic, rf),
		run: func(ctx context.Context, ex *executor.Executor) (bool, error) {
			op, err := ex.ChangeReplicationFactor(ctx, executor.ReplicationFactorRequest{Key: key, ID: fmt.Sprintf("rf-%s-%d", topic, rf),
				Resource: topic, Topic: topic, ReplicationFactor: rf, Throttle: throttleRate})
			return op != nil && op.Paused(), err
		},
		goal: func() string {
			for _, p := range w.m.topicParts(topic) {
				if len(p.replicas) != rf || p.target != nil {
					return fmt.Sprintf("%s has replicas %v (reassigning to %v)", p.key, p.replicas, p.target)
				}
			}
			return w.unfinished(key)
		},
	}
}

func (w *world) growJob(topic string, partitions int) *job {
	return &job{
		name: fmt.Sprintf("grow topic %s to %d partitions", topic, partitions),
		run: func(ctx context.Context, ex *executor.Executor) (bool, error) {
			_, err := ex.GrowPartitions(ctx, executor.GrowRequest{ID: "grow-" + topic, Resource: topic, Topic: topic, Partitions: partitions})
			return false, err
		},
		goal: func() string {
			if n := len(w.m.topicParts(topic)); n != partitions {
				return fmt.Sprintf("topic %s has %d partitions, want %d", topic, n, partitions)
			}
			return ""
		},
	}
}

func (w *world) unfinished(key string) string {
	if op, ok := w.m.stored[key]; ok && !op.done {
		return fmt.Sprintf("operation %s is unfinished in phase %s", op.id, op.phase)
	}
	return ""
}

// apply is one `terraform apply` of j: a new process that runs the entry
// point once. It reports whether j reached its goal.
func (w *world) apply(j *job) (bool, string) {
	a, ex := w.newActor(j.lane, j.maxRun)
	paused, err := j.run(a.ctx, ex)
	if err == nil && !w.faults.on {
		// As the provider after every apply: throttles that finished
		// operations left (on a broker that was down at their finish,
		// say) are removed. Only in the runs without faults, so that
		// the faulty runs of every seed stay what they were.
		if _, cerr := ex.ClearOrphanedThrottles(a.ctx); cerr != nil {
			err = cerr
		}
	}
	a.cancel()
	if a.dead.Load() {
		return false, "the process crashed"
	}
	missing := ""
	w.inspect(j.lane, func() { missing = j.goal() })
	if err == nil {
		j.succeeded = true
	}
	var infeasible *engine.InfeasibleError
	switch {
	case errors.As(err, &infeasible) && missing != "":
		// Another process's change made this one impossible (a topic
		// raised to as many replicas as there are racks, before a drain
		// of a rack's only broker): refused before anything moved, as a
		// plan would refuse it. That is the right end, not a failure.
		j.refused = true
		w.note(0, "refused: %v", err)
		return true, ""
	case err != nil:
		return false, err.Error()
	case paused:
		return false, ""
	case missing != "":
		return false, "it returned without error, but " + missing
	}
	return true, ""
}

// drive runs the jobs one after the other: a few applies with faults
// each, as a user would retry a failed apply.
func (w *world) drive(jobs []*job, done chan<- struct{}) {
	defer close(done)
	for _, j := range jobs {
		tries := j.tries
		if tries == 0 {
			tries = faultyRuns
		}
		for i := 0; i < tries; i++ {
			if ok, _ := w.apply(j); ok {
				break
			}
		}
	}
}

// finish runs the jobs without faults, one apply of each unfinished one
// in turn (one may wait for the other's operation to finish), until each
// reaches its goal. A job whose applies fail three times alike is stuck.
func (w *world) finish(jobs []*job) {
	type progress struct {
		ok         bool
		why, last  string
		same, runs int
	}
	ps := make([]progress, len(jobs))
	for round := 0; round < cleanRuns; round++ {
		active := false
		for i, j := range jobs {
			p := &ps[i]
			if p.ok || p.same >= 3 {
				continue
			}
			active = true
			p.runs++
			p.ok, p.why = w.apply(j)
			if p.why != "" && p.why == p.last {
				p.same++
			} else {
				p.same = 1
			}
			p.last = p.why
		}
		if !active {
			break
		}
	}
	for i, j := range jobs {
		if !ps[i].ok {
			w.violate("%s: not finished after %d runs without faults; the last: %s", j.name, ps[i].runs, ps[i].why)
		}
	}
}

// inspect runs f under the scheduler, beside no port call.
func (w *world) inspect(lane int, f func()) {
	w.turn(&request{actor: w.oracle, what: fmt.Sprint("inspect ", lane), apply: func() error { f(); return nil }})
}
