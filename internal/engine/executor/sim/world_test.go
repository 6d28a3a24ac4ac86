package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// world is one seed's run: the model, the scheduler, the processes and
// what was seen.
type world struct {
	seed   uint64
	prof   profile
	m      *model
	s      *sched
	faults faultRates
	stats  *stats
	// actors are the processes by id: lane*1000 + their number in the
	// lane, so that two lanes starting processes at once number them
	// alike in every run.
	actors map[int]*actor
	seq    [3]int
	// leaseState is the lease as the log's first replayed records give it.
	leaseState executor.LeaseState
	replayed   int
	// reuse: the platform replaces a dead broker by starting it again
	// under its id with an empty disk.
	reuse bool
	// demoted are the brokers the cluster's operations keep demoted
	// (profile.demote); clusterJob is the last operation of the cluster's
	// resource, if the seed has one, and second says another process ran
	// beside it.
	demoted    []int32
	clusterJob *job
	second     bool
	// oracle is the test itself, reading the model between calls.
	oracle *actor

	mu         sync.Mutex // notes and violations: executors log from their goroutines
	notes      []note
	violations []string
}

// note is one event of the run, formatted only when a seed fails.
type note struct {
	at    time.Time
	actor int
	what  string
	fault faultKind
	call  bool
}

func (n note) String() string {
	if !n.call {
		return fmt.Sprintf("%s [%d] %s", n.at.Format("15:04:05.000"), n.actor, n.what)
	}
	return fmt.Sprintf("%s [%d] call %s: %s", n.at.Format("15:04:05.000"), n.actor, n.what, n.fault)
}

// maxNotes bounds a run's notes; the last ones are kept.
const maxNotes = 200000

func (w *world) record(n note) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.notes) >= maxNotes {
		w.notes = w.notes[maxNotes/2:]
	}
	w.notes = append(w.notes, n)
}

func (w *world) note(actor int, format string, args ...any) {
	w.record(note{at: time.Now(), actor: actor, what: fmt.Sprintf(format, args...)})
}

func (w *world) violate(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.violations) < 20 {
		w.violations = append(w.violations, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
}

// Process settings: short enough that a seed's run is a few hundred calls.
const (
	pollInterval = 5 * time.Second
	leaseTTL     = 30 * time.Second
	leasePoll    = 5 * time.Second
)

// newActor starts a process: its own context, lease session and executor.
func (w *world) newActor(lane int, maxRun time.Duration) (*actor, *executor.Executor) {
	w.seq[lane]++
	a := &actor{id: lane*1000 + w.seq[lane]}
	a.session = fmt.Sprintf("session-%d", a.id)
	a.ctx, a.cancel = context.WithCancel(context.WithValue(context.Background(), actorKey{}, a))
	w.mu.Lock()
	w.actors[a.id] = a
	w.mu.Unlock()
	l := &executor.Lessee{Records: leaseLog{w}, Host: "sim", PID: a.id, Session: a.session, ExpireAfter: leaseTTL, Poll: leasePoll,
		Clock: clock{}, Log: logger{w}, NewID: func() string { return fmt.Sprintf("a%d-c%d", a.id, a.claims.Add(1)) }}
	ex := executor.New(executor.Deps{Kafka: kafka{w}, Scaler: scaler{w}, Placer: placer{w}, Store: store{w}, Clock: clock{}, Log: logger{w}, Lease: l},
		executor.Settings{PollInterval: pollInterval, MaxRunDuration: maxRun})
	return a, ex
}

func (w *world) actor(id int) *actor {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.actors[id]
}

// victim is the broker a fault kills: a running one, by the seed.
func (w *world) victim() *broker {
	var up []*broker
	for _, b := range w.m.registered() {
		if b.running {
			up = append(up, b)
		}
	}
	if len(up) == 0 {
		return nil
	}
	return up[w.s.rng.IntN(len(up))]
}

func (w *world) killedBroker() *broker {
	for _, b := range w.m.registered() {
		if b.killed && !b.running {
			return b
		}
	}
	return nil
}

func (w *world) brokerEvent(f faultKind) {
	switch f {
	case faultBrokerDies:
		b := w.victim()
		w.m.kill(b)
		b.killed = true
		w.note(0, "broker %d dies", b.id)
	case faultBrokerBack:
		b := w.killedBroker()
		w.m.revive(b)
		w.note(0, "broker %d is back", b.id)
	}
}

// reviveAll brings back every broker a fault killed, before the runs
// without faults.
func (w *world) reviveAll() {
	for _, b := range w.m.registered() {
		if b.killed && !b.running {
			w.m.revive(b)
		}
	}
}

// The invariants at every instant: they are checked around each call
// that changes the cluster, the only moments it changes.

// lease is the lease as the log gives it now; its verdict changes only
// with a record appended.
func (w *world) lease() executor.LeaseState {
	if w.replayed != len(w.m.lease) {
		w.replayed, w.leaseState = len(w.m.lease), executor.ReplayLease(w.m.lease)
	}
	return w.leaseState
}

// checkLeaseBeforeChange: a process changes the cluster only while no
// other process's claim holds the lease, as the log shows it to every
// reader.
func (w *world) checkLeaseBeforeChange(r *request) {
	h, ok := w.lease().Holder()
	if !ok || !h.Holding {
		return
	}
	if other := w.m.claimActor[h.ID]; other != r.actor.id && !w.actor(other).dead.Load() {
		w.violate("process %d ran %s while process %d holds the lease (claim %s, last heartbeat %s)", r.actor.id, r.what, other, h.ID, h.LastSeen.Format("15:04:05.000"))
	}
}

func (w *world) checkAfterChange(r *request) {
	used := w.m.used()
	for _, b := range w.m.registered() {
		if used[b.id] > b.capacity {
			w.violate("after %s by process %d broker %d holds %d bytes (copies in flight counted), over its capacity %d by %d",
				r.what, r.actor.id, b.id, used[b.id], b.capacity, used[b.id]-b.capacity)
		}
	}
}

// saved checks an operation as it is recorded past its finish (completed,
// or on to remove its brokers): the cluster is at its target then, while
// its process still holds the lease. Later another resource's operation
// may move the same partitions, between two runs of a removal.
func (w *world) saved(a *actor, op *executor.Operation) {
	if op.Phase == executor.PhaseCompleted && w.m.stored[op.Key].phase != executor.PhaseCompleted {
		w.stats.completed++
	}
	if w.m.stored[op.Key].phase != executor.PhaseFinish || op.Plan == nil ||
		(op.Phase != executor.PhaseCompleted && op.Phase != executor.PhaseRemoveBrokers) {
		return
	}
	if h, ok := w.lease().Holder(); !ok || w.m.claimActor[h.ID] != a.id {
		// A record that arrives once its process lost the lease (the
		// error a run stopped with is saved whatever): another operation
		// may have run since its finish verified the cluster.
		return
	}
	for _, t := range op.Plan.Target {
		p := w.m.part(partKey{t.Topic, t.Partition})
		switch {
		case p == nil:
		case p.target != nil:
			w.violate("operation %s recorded %s while %s is still reassigning to %v", op.ID, op.Phase, p.key, p.target)
		case !slices.Equal(p.replicas, t.Replicas):
			w.violate("operation %s recorded %s with %s on %v; its target is %v", op.ID, op.Phase, p.key, p.replicas, t.Replicas)
		}
	}
}

// checkFinal is the state once every operation has finished.
func (w *world) checkFinal() {
	m := w.m
	for _, key := range sortedKeys(m.stored) {
		if op := m.stored[key]; !op.done {
			w.violate("operation %s under %s is unfinished after the runs without faults: phase %s, last error %q", op.id, key, op.phase, op.lastError)
		}
	}
	for _, p := range m.parts {
		rf := m.rf[p.key.topic]
		var down []int32
		for _, b := range p.replicas {
			if !m.up(b) {
				down = append(down, b)
			}
		}
		switch {
		case p.target != nil:
			w.violate("%s is still reassigning to %v", p.key, p.target)
		case len(p.replicas) != rf:
			w.violate("%s has %d replicas %v, want the replication factor %d", p.key, len(p.replicas), p.replicas, rf)
		case len(down) > 0:
			w.violate("%s has replicas on brokers not up: %v of %v", p.key, down, p.replicas)
		case p.leader < 0:
			w.violate("%s has no leader", p.key)
		case len(m.isr(p)) != len(p.replicas):
			w.violate("%s has replicas %v, of which %v in sync", p.key, p.replicas, m.isr(p))
		}
	}
	var left []string
	for _, id := range m.brokerIDs() {
		if r := m.rates[id]; r > 0 && m.brokers[id].registered {
			left = append(left, fmt.Sprintf("broker %d rate %d", id, r))
		}
		if m.cordons[id] && m.brokers[id].registered {
			left = append(left, fmt.Sprintf("broker %d cordoned", id))
		}
	}
	for _, t := range sortedKeys(m.leaderThr) {
		left = append(left, fmt.Sprintf("topic %s leader entries %v", t, m.leaderThr[t]))
	}
	for _, t := range sortedKeys(m.followThr) {
		left = append(left, fmt.Sprintf("topic %s follower entries %v", t, m.followThr[t]))
	}
	if len(left) > 0 {
		w.violate("left behind once finished: %s", strings.Join(left, "; "))
	}
	w.checkOwedBalance()
	w.checkDemoted()
	st := executor.ReplayLease(m.lease)
	for _, c := range st.Queue() {
		a := w.actor(m.claimActor[c.ID])
		if !a.dead.Load() && !a.releaseFailed {
			w.violate("the lease is not free: claim %s of process %d lives (holding %v)", c.ID, a.id, c.Holding)
		}
	}
}

// checkDemoted: once the cluster's operation is done, a demoted broker is
// the preferred leader of no partition that a replica on another broker
// that is up could lead. Topic t1 is left out when a second process
// changed it (a topic's own operations do not know of the demotion).
func (w *world) checkDemoted() {
	if len(w.demoted) == 0 || w.clusterJob == nil || !w.clusterJob.succeeded {
		return
	}
	for _, p := range w.m.parts {
		if len(p.replicas) == 0 || !slices.Contains(w.demoted, p.replicas[0]) || (w.second && p.key.topic == "t1") {
			continue
		}
		for _, b := range p.replicas[1:] {
			if w.m.up(b) && !slices.Contains(w.demoted, b) {
				w.violate("demoted broker %d is the preferred leader of %s (replicas %v), which broker %d could lead", p.replicas[0], p.key, p.replicas, b)
				break
			}
		}
	}
}

// checkOwedBalance: an operation that was cancelled or abandoned never
// hides a half-balanced cluster behind a plan with nothing to do. Either
// the cluster is balanced, or the plan at its count, made from the
// stopped operation, has moves or reorders to show.
func (w *world) checkOwedBalance() {
	b, ok := w.m.store[clusterKey]
	if !ok {
		return
	}
	op := &executor.Operation{}
	if err := json.Unmarshal(b, op); err != nil || !op.Done() || op.Phase == executor.PhaseCompleted {
		return
	}
	snap := w.m.snapshot()
	reasons, _, err := engine.OutOfBalance(snap, opts())
	if err != nil || len(reasons) == 0 {
		return
	}
	pv, err := executor.PreviewScaleFrom(snap, op, len(snap.Brokers), nil, executor.BalanceNone, opts())
	if err != nil || pv.Plan == nil || pv.Plan.ReplicaMoves+len(pv.Plan.Reorders) == 0 {
		w.violate("operation %s ended %s with the cluster out of balance (%s), and the plan at %d brokers shows nothing to do (%v)",
			op.ID, op.Phase, strings.Join(reasons, "; "), len(snap.Brokers), err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
