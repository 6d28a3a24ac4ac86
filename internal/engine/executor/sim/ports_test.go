package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// Every port the executor drives, over the model: each method is one or
// more calls (world.call), which is where the scheduler takes its turn and
// draws a fault. A port that gains a method gets it here, as one more
// call with its effect on the model.

// kafka is the executor.Kafka port.
type kafka struct{ w *world }

var _ executor.Kafka = kafka{}

func (k kafka) Snapshot(ctx context.Context) (c engine.Cluster, err error) {
	return c, k.w.call(ctx, "Snapshot", false, func() error { c = k.w.m.snapshot(); return nil })
}

func (k kafka) Partitions(ctx context.Context) (out []executor.PartitionStatus, err error) {
	m := k.w.m
	return out, k.w.call(ctx, "Partitions", false, func() error {
		for _, p := range m.parts {
			st := executor.PartitionStatus{Topic: p.key.topic, Partition: p.key.part, Replicas: p.union(), ISR: m.isr(p), Leader: p.leader}
			if p.target == nil && m.last.Before(p.staleUntil) {
				st.Replicas, st.ISR, st.Leader = slices.Clone(p.stale), slices.Clone(p.staleISR), p.staleLeader
			}
			out = append(out, st)
		}
		return nil
	})
}

func (k kafka) Reassignments(ctx context.Context) (out []executor.Reassignment, err error) {
	return out, k.w.call(ctx, "Reassignments", false, func() error {
		for _, p := range k.w.m.parts {
			if p.target == nil {
				continue
			}
			r := executor.Reassignment{Topic: p.key.topic, Partition: p.key.part, Replicas: p.union(), Adding: p.adding()}
			for _, b := range p.replicas {
				if !slices.Contains(p.target, b) {
					r.Removing = append(r.Removing, b)
				}
			}
			out = append(out, r)
		}
		return nil
	})
}

func (k kafka) Brokers(ctx context.Context) (out []executor.BrokerStatus, err error) {
	return out, k.w.call(ctx, "Brokers", false, func() error {
		for _, b := range k.w.m.registered() {
			out = append(out, executor.BrokerStatus{ID: b.id, Rack: b.rack, Fenced: !b.running})
		}
		return nil
	})
}

// AlterAssignments takes the whole request or, like Kafka refusing a
// cordoned or unknown broker, none of it.
func (k kafka) AlterAssignments(ctx context.Context, as []executor.Assignment) error {
	m := k.w.m
	return k.w.call(ctx, "AlterAssignments", true, func() error { return m.assign(as) })
}

// assign is AlterAssignments on the model.
func (m *model) assign(as []executor.Assignment) error {
	for _, a := range as {
		p := m.part(partKey{a.Topic, a.Partition})
		if p == nil {
			return fmt.Errorf("%s p%d: UNKNOWN_TOPIC_OR_PARTITION", a.Topic, a.Partition)
		}
		if len(a.Replicas) == 0 || dup(a.Replicas) {
			return fmt.Errorf("%s p%d: INVALID_REPLICA_ASSIGNMENT %v", a.Topic, a.Partition, a.Replicas)
		}
		for _, b := range a.Replicas {
			if br := m.brokers[b]; br == nil || !br.registered {
				return fmt.Errorf("%s p%d: INVALID_REPLICA_ASSIGNMENT: broker %d is not registered", a.Topic, a.Partition, b)
			}
			if m.cordons[b] {
				return fmt.Errorf("%w: %s p%d: INVALID_REPLICA_ASSIGNMENT: broker %d is cordoned", executor.ErrCordoned, a.Topic, a.Partition, b)
			}
		}
	}
	for _, a := range as {
		p := m.part(partKey{a.Topic, a.Partition})
		if engine.SameMembers(p.replicas, a.Replicas) {
			// A reorder, or a reassignment back to where it started:
			// done at once.
			p.replicas, p.target, p.copied = slices.Clone(a.Replicas), nil, nil
			m.elect(p)
			continue
		}
		copied := map[int32]int64{}
		for _, b := range a.Replicas {
			if !slices.Contains(p.replicas, b) {
				copied[b] = p.copied[b]
			}
		}
		p.target, p.copied = slices.Clone(a.Replicas), copied
		m.complete(p)
	}
	return nil
}

func dup(s []int32) bool {
	for i, x := range s {
		if slices.Contains(s[i+1:], x) {
			return true
		}
	}
	return false
}

// ReassignKeepingReplicationFactor refuses, as the controller does with
// the guard of KIP-860, a target whose size differs from the partition's
// replica count (its target's while it moves), and submits the others as
// AlterAssignments does. The model's metadata never lags, so the executor
// asks only about a union someone else left.
func (k kafka) ReassignKeepingReplicationFactor(ctx context.Context, as []executor.Assignment) (taken []executor.Assignment, err error) {
	m := k.w.m
	err = k.w.call(ctx, "ReassignKeepingReplicationFactor", true, func() error {
		for _, a := range as {
			p := m.part(partKey{a.Topic, a.Partition})
			if p == nil {
				return fmt.Errorf("%s p%d: UNKNOWN_TOPIC_OR_PARTITION", a.Topic, a.Partition)
			}
			count := len(p.replicas)
			if p.target != nil {
				count = len(p.target)
			}
			if count == len(a.Replicas) {
				taken = append(taken, a)
			}
		}
		return m.assign(taken)
	})
	return taken, err
}

func (k kafka) CancelReassignments(ctx context.Context, as []executor.Assignment) error {
	m := k.w.m
	return k.w.call(ctx, "CancelReassignments", true, func() error {
		for _, a := range as {
			if p := m.part(partKey{a.Topic, a.Partition}); p != nil && p.target != nil {
				p.target, p.copied = nil, nil
				m.elect(p)
			}
		}
		return nil
	})
}

func (k kafka) BrokerThrottles(ctx context.Context, brokers []int32) (out map[int32]executor.BrokerThrottle, err error) {
	return out, k.w.call(ctx, "BrokerThrottles", false, func() error {
		out = map[int32]executor.BrokerThrottle{}
		for _, b := range brokers {
			if !k.w.m.up(b) {
				return fmt.Errorf("broker %d is not available to describe its config", b)
			}
			out[b] = executor.BrokerThrottle{Leader: k.w.m.rates[b], Follower: k.w.m.rates[b]}
		}
		return nil
	})
}

func (k kafka) SetThrottle(ctx context.Context, brokers []int32, rate int64) error {
	m := k.w.m
	return k.w.call(ctx, "SetThrottle", true, func() error {
		for _, b := range brokers {
			if !m.up(b) {
				return fmt.Errorf("broker %d is not available to take its config", b)
			}
		}
		for _, b := range brokers {
			m.rates[b] = rate
		}
		return nil
	})
}

func (k kafka) ClearThrottle(ctx context.Context, brokers []int32) error {
	return k.w.call(ctx, "ClearThrottle", true, func() error {
		// As SetThrottle: only a broker that is up takes its config (no
		// other broker may change it for it).
		for _, b := range brokers {
			if !k.w.m.up(b) {
				return fmt.Errorf("broker %d is not available to take its config", b)
			}
		}
		for _, b := range brokers {
			delete(k.w.m.rates, b)
		}
		return nil
	})
}

// ThrottleReplicas is two requests, as in internal/kafka: a read of the
// topics' lists, then, once record has kept what is missing, the append.
func (k kafka) ThrottleReplicas(ctx context.Context, ts []executor.ThrottledReplicas, record func([]executor.ThrottledReplicas) error) error {
	m := k.w.m
	var adding []executor.ThrottledReplicas
	err := k.w.call(ctx, "DescribeConfigs topics", false, func() error {
		for _, t := range ts {
			a := executor.ThrottledReplicas{Topic: t.Topic}
			for _, e := range t.Leader {
				if !slices.Contains(m.leaderThr[t.Topic], e) && !slices.Contains(a.Leader, e) {
					a.Leader = append(a.Leader, e)
				}
			}
			for _, e := range t.Follower {
				if !slices.Contains(m.followThr[t.Topic], e) && !slices.Contains(a.Follower, e) {
					a.Follower = append(a.Follower, e)
				}
			}
			if len(a.Leader)+len(a.Follower) > 0 {
				adding = append(adding, a)
			}
		}
		return nil
	})
	if err != nil || len(adding) == 0 {
		return err
	}
	if err := record(adding); err != nil {
		return err
	}
	return k.w.call(ctx, "ThrottleReplicas", true, func() error {
		for _, a := range adding {
			m.leaderThr[a.Topic] = append(m.leaderThr[a.Topic], a.Leader...)
			m.followThr[a.Topic] = append(m.followThr[a.Topic], a.Follower...)
		}
		return nil
	})
}

func (k kafka) UnthrottleReplicas(ctx context.Context, ts []executor.ThrottledReplicas) error {
	if len(ts) == 0 {
		return nil
	}
	m := k.w.m
	return k.w.call(ctx, "UnthrottleReplicas", true, func() error {
		for _, t := range ts {
			m.leaderThr[t.Topic] = slices.DeleteFunc(m.leaderThr[t.Topic], func(e string) bool { return slices.Contains(t.Leader, e) })
			m.followThr[t.Topic] = slices.DeleteFunc(m.followThr[t.Topic], func(e string) bool { return slices.Contains(t.Follower, e) })
			if len(m.leaderThr[t.Topic]) == 0 {
				delete(m.leaderThr, t.Topic)
			}
			if len(m.followThr[t.Topic]) == 0 {
				delete(m.followThr, t.Topic)
			}
		}
		return nil
	})
}

func (k kafka) ElectPreferredLeaders(ctx context.Context, as []executor.Assignment) error {
	m := k.w.m
	return k.w.call(ctx, "ElectPreferredLeaders", true, func() error {
		for _, a := range as {
			if p := m.part(partKey{a.Topic, a.Partition}); p != nil && slices.Contains(m.isr(p), p.replicas[0]) {
				p.leader = p.replicas[0]
			}
		}
		return nil
	})
}

func (k kafka) UnregisterBroker(ctx context.Context, id int32) error {
	m := k.w.m
	return k.w.call(ctx, fmt.Sprintf("UnregisterBroker %d", id), true, func() error {
		b := m.brokers[id]
		if b == nil || !b.registered {
			return nil
		}
		if b.running {
			return fmt.Errorf("broker %d is still running", id)
		}
		if h := m.holds(id); len(h) > 0 {
			k.w.violate("broker %d was unregistered while it still holds %v", id, h)
		}
		b.registered = false
		return nil
	})
}

func (k kafka) CordonSupported(ctx context.Context) (ok bool, err error) {
	return ok, k.w.call(ctx, "CordonSupported", false, func() error { ok = !k.w.m.noCordon; return nil })
}

func (k kafka) SetCordon(ctx context.Context, brokers []int32, on bool) error {
	if len(brokers) == 0 {
		return nil
	}
	m := k.w.m
	return k.w.call(ctx, fmt.Sprintf("SetCordon %v", on), true, func() error {
		if m.noCordon {
			return errors.New(`unknown config "cordoned.log.dirs"`)
		}
		for _, b := range brokers {
			if !m.up(b) {
				return fmt.Errorf("broker %d is not available to take its config", b)
			}
		}
		for _, b := range brokers {
			if on {
				m.cordons[b] = true
			} else {
				delete(m.cordons, b)
			}
		}
		return nil
	})
}

// scaler is the platform: it starts brokers in the racks round-robin (a
// replacement in the replaced broker's rack) and stops the ones removed.
// The request takes a while, as a platform's does.
type scaler struct{ w *world }

func (s scaler) ScaleTo(ctx context.Context, n int, remove []int32) error {
	m := s.w.m
	err := s.w.call(ctx, fmt.Sprintf("ScaleTo %d %v", n, remove), true, func() error {
		regs := m.registered()
		if n == len(regs) && len(remove) > 0 {
			if s.w.reuse && s.allDead(remove) {
				// As a StatefulSet does: the same ids, empty disks.
				for _, id := range remove {
					m.reuse(m.brokers[id])
				}
				return nil
			}
			for _, id := range remove {
				b := m.brokers[id]
				if b == nil {
					return fmt.Errorf("broker %d is unknown to the platform", id)
				}
				m.startBroker(b.rack)
			}
			return nil
		}
		for _, id := range remove {
			b := m.brokers[id]
			if b == nil || !b.registered {
				continue
			}
			if h := m.holds(id); len(h) > 0 {
				s.w.violate("the platform was asked to stop broker %d, which still holds %v", id, h)
			}
			if m.cordons[id] && b.running {
				// A broker that is down cannot take its own config: its
				// cordon stays under its id, and the executor warns of it.
				s.w.violate("the platform was asked to stop broker %d while it is up and still cordoned: its id keeps the cordon", id)
			}
			m.kill(b)
			b.killed = false
		}
		staying := 0
		for _, b := range m.registered() {
			if !slices.Contains(remove, b.id) {
				staying++
			}
		}
		for ; staying < n; staying++ {
			m.startBroker(m.racks[int(m.nextBroker)%len(m.racks)])
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.w.wait(ctx, "ScaleTo", 20*time.Second, nil)
}

// sleep waits on the bubble's clock, which the executor's own real clock
// reads there.
func (s scaler) allDead(ids []int32) bool {
	for _, id := range ids {
		if b := s.w.m.brokers[id]; b == nil || b.running {
			return false
		}
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) error { return executor.SystemClock{}.Sleep(ctx, d) }

// placer is the executor.Placer port; its placement lock is this
// process's, and one process runs one executor at a time.
type placer struct{ w *world }

type placement struct {
	w    *world
	view engine.Cluster
}

func (p placer) BeginPlacement(ctx context.Context) (executor.Placement, error) {
	pl := &placement{w: p.w}
	return pl, p.w.call(ctx, "BeginPlacement", false, func() error {
		pl.view = p.w.m.placementView()
		for i := range pl.view.Brokers {
			pl.view.Brokers[i].CapacityBytes, pl.view.Brokers[i].UsedBytes = 0, 0
		}
		return nil
	})
}

func (p *placement) View() engine.Cluster { return p.view }
func (p *placement) Release()             {}

// CreateTopic is CreatePartitions of a topic that has no partition yet;
// the model keeps no topic configs, and draws no topic creation yet.
func (p *placement) CreateTopic(ctx context.Context, topic string, parts []engine.Partition, _ map[string]string) error {
	return p.CreatePartitions(ctx, map[string][]engine.Partition{topic: parts})
}

func (p *placement) CreatePartitions(ctx context.Context, added map[string][]engine.Partition) error {
	m := p.w.m
	return p.w.call(ctx, "CreatePartitions", true, func() error {
		topics := make([]string, 0, len(added))
		for t := range added {
			topics = append(topics, t)
		}
		sort.Strings(topics)
		for _, t := range topics {
			have := len(m.topicParts(t))
			for i, np := range added[t] {
				if int(np.Partition) != have+i {
					return fmt.Errorf("topic %s: INVALID_PARTITIONS: partition %d follows %d partitions", t, np.Partition, have)
				}
				for _, b := range np.Replicas {
					if !m.up(b) {
						return fmt.Errorf("topic %s: INVALID_REPLICA_ASSIGNMENT: broker %d is not available", t, b)
					}
				}
			}
		}
		for _, t := range topics {
			for _, np := range added[t] {
				part := &partition{key: partKey{t, np.Partition}, replicas: slices.Clone(np.Replicas), leader: -1}
				m.addPartition(part)
				m.elect(part)
			}
		}
		return nil
	})
}

func (p placer) AwaitPartitionsReady(ctx context.Context, topic string, n int) error {
	m := p.w.m
	for try := 0; try < 10; try++ {
		ready := false
		err := p.w.call(ctx, "Metadata "+topic, false, func() error {
			ps := m.topicParts(topic)
			ready = len(ps) >= n
			for _, q := range ps {
				ready = ready && q.leader >= 0 && len(m.isr(q)) == len(q.replicas)
			}
			return nil
		})
		if err == nil && ready {
			return nil
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("topic %s: not every partition of %d has a leader and a full ISR", topic, n)
}

// store is the operation store, JSON round-tripped as the Kafka store
// does.
type store struct{ w *world }

func (s store) Load(ctx context.Context, key string) (op *executor.Operation, err error) {
	return op, s.w.call(ctx, "Load "+key, false, func() error {
		b, ok := s.w.m.store[key]
		if !ok {
			return nil
		}
		op = &executor.Operation{}
		return json.Unmarshal(b, op)
	})
}

func (s store) Save(ctx context.Context, op *executor.Operation) error {
	b, err := json.Marshal(op)
	if err != nil {
		return err
	}
	return s.w.call(ctx, "Save "+op.Key, false, func() error {
		s.w.saved(actorOf(ctx), op)
		s.w.m.store[op.Key] = b
		s.w.m.stored[op.Key] = storedOp{id: op.ID, phase: op.Phase, done: op.Done(), lastError: op.LastError}
		return nil
	})
}

func (s store) List(ctx context.Context) (out []*executor.Operation, err error) {
	return out, s.w.call(ctx, "List", false, func() error {
		keys := make([]string, 0, len(s.w.m.store))
		for k := range s.w.m.store {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			op := &executor.Operation{}
			if err := json.Unmarshal(s.w.m.store[k], op); err != nil {
				return err
			}
			out = append(out, op)
		}
		return nil
	})
}

// leaseLog is one partition whose broker stamps each record with the
// simulated clock.
type leaseLog struct{ w *world }

func (l leaseLog) Ensure(ctx context.Context) error {
	return l.w.call(ctx, "lease Ensure", false, func() error { return nil })
}

func (l leaseLog) Append(ctx context.Context, r executor.LeaseRecord) error {
	a := actorOf(ctx)
	err := l.w.call(ctx, "lease Append "+string(r.Kind), false, func() error {
		r.Offset, r.Time = int64(len(l.w.m.lease)), time.Now()
		l.w.m.lease = append(l.w.m.lease, r)
		l.w.m.claimActor[r.Claim] = a.id
		return nil
	})
	if err != nil && r.Kind == executor.LeaseRelease {
		a.releaseFailed = true
	}
	return err
}

func (l leaseLog) Since(ctx context.Context, t time.Time) (out []executor.LeaseRecord, err error) {
	return out, l.w.call(ctx, "lease Since", false, func() error {
		recs := l.w.m.lease
		i := sort.Search(len(recs), func(i int) bool { return !recs[i].Time.Before(t) })
		out = append(out, recs[i:]...)
		return nil
	})
}

// clock is the bubble's fake clock, which advances when every goroutine
// of the run waits.
type clock struct{}

func (clock) Now() time.Time { return time.Now() }

func (clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return sleep(ctx, d)
}

// logger keeps the executor's messages in the run's trace.
type logger struct{ w *world }

func (l logger) Info(ctx context.Context, msg string, _ map[string]any) { l.note(ctx, "INFO", msg) }
func (l logger) Warn(ctx context.Context, msg string, _ map[string]any) { l.note(ctx, "WARN", msg) }

func (l logger) note(ctx context.Context, level, msg string) {
	id := -1
	if a := actorOf(ctx); a != nil {
		id = a.id
	}
	l.w.record(note{at: time.Now(), actor: id, what: level + " " + msg})
}
