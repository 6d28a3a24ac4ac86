package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// The model cluster: what the ports read and change. Every field is
// touched only by the scheduler's goroutine (sched_test.go), one port call
// at a time, so the model needs no lock and its history is a function of
// the seed.

// unthrottledRate is how fast a replica copies without a throttle.
const unthrottledRate = 200 << 20

type broker struct {
	id       int32
	rack     string
	capacity int64
	// registered: the controller knows the broker; running: its process
	// is up. Registered and not running is fenced.
	registered, running bool
	// killed by a fault (comes back by a fault or before the final runs);
	// doomed: dead from the start of a replacement, never back.
	killed, doomed bool
	// startsAt is when a broker the platform started joins: until then it
	// is registered and fenced, as a new Kafka broker is while it catches
	// up with the metadata log. Zero once it runs.
	startsAt time.Time
}

type partKey struct {
	topic string
	part  int32
}

func (k partKey) String() string { return fmt.Sprintf("%s p%d", k.topic, k.part) }

type partition struct {
	key      partKey
	replicas []int32
	leader   int32
	size     int64
	// target is the reassignment in flight (nil when none); copied the
	// bytes each adding replica has so far.
	target []int32
	copied map[int32]int64
	// behind is what a replica fetches before it is in sync again: a
	// broker back under its id with an empty disk.
	behind map[int32]int64
	// stale, staleISR and staleLeader are what the brokers' metadata
	// shows of the partition until staleUntil: the old and new replicas of
	// a reassignment that ended, as they were just before (model.lag).
	stale, staleISR []int32
	staleLeader     int32
	staleUntil      time.Time
}

// model is the cluster, the operation store and the lease log.
type model struct {
	brokers map[int32]*broker
	parts   []*partition // sorted by topic, then partition
	// rf is each topic's replication factor as the scenario expects it.
	rf         map[string]int
	nextBroker int32
	racks      []string
	capacity   int64

	rates     map[int32]int64
	leaderThr map[string][]string // topic -> "partition:broker"
	followThr map[string][]string
	cordons   map[int32]bool
	noCordon  bool

	store map[string][]byte
	// stored is what the checks read of each stored operation, kept at
	// its save so that they need not decode it.
	stored map[string]storedOp

	lease      []executor.LeaseRecord
	claimActor map[string]int

	last time.Time // the instant the copies were advanced to
	// lag is how long the brokers' metadata shows a finished
	// reassignment's old and new replicas together, while the controller
	// no longer lists it (faultLag).
	lag time.Duration
}

func newModel(start time.Time) *model {
	return &model{
		brokers: map[int32]*broker{}, rf: map[string]int{}, rates: map[int32]int64{},
		leaderThr: map[string][]string{}, followThr: map[string][]string{}, cordons: map[int32]bool{},
		store: map[string][]byte{}, stored: map[string]storedOp{}, claimActor: map[string]int{}, last: start,
	}
}

func (m *model) addBroker(rack string) *broker {
	m.nextBroker++
	b := &broker{id: m.nextBroker, rack: rack, capacity: m.capacity, registered: true, running: true}
	m.brokers[b.id] = b
	return b
}

// brokerStartTime is how long a broker the platform starts stays fenced.
// It is longer than the platform's answer (scaler.ScaleTo), so that the
// executor waits for it, and a run stopped then leaves a broker of its own
// operation fenced for the next run to find.
const brokerStartTime = 30 * time.Second

// startBroker registers a new broker in rack that joins brokerStartTime
// from now.
func (m *model) startBroker(rack string) *broker {
	b := m.addBroker(rack)
	b.running, b.startsAt = false, m.last.Add(brokerStartTime)
	return b
}

func (m *model) brokerIDs() []int32 {
	ids := make([]int32, 0, len(m.brokers))
	for id := range m.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (m *model) registered() []*broker {
	var out []*broker
	for _, id := range m.brokerIDs() {
		if b := m.brokers[id]; b.registered {
			out = append(out, b)
		}
	}
	return out
}

func (m *model) up(id int32) bool {
	b := m.brokers[id]
	return b != nil && b.registered && b.running
}

func (m *model) part(k partKey) *partition {
	i, ok := slices.BinarySearchFunc(m.parts, k, func(p *partition, k partKey) int { return cmpKey(p.key, k) })
	if !ok {
		return nil
	}
	return m.parts[i]
}

func cmpKey(a, b partKey) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return int(a.part - b.part)
}

func (m *model) addPartition(p *partition) {
	m.parts = append(m.parts, p)
	sort.Slice(m.parts, func(i, j int) bool { return cmpKey(m.parts[i].key, m.parts[j].key) < 0 })
}

func (m *model) topicParts(topic string) []*partition {
	var out []*partition
	for _, p := range m.parts {
		if p.key.topic == topic {
			out = append(out, p)
		}
	}
	return out
}

// union is the replica list Kafka shows during a reassignment: the target,
// then the replicas leaving.
func (p *partition) union() []int32 {
	if p.target == nil {
		return slices.Clone(p.replicas)
	}
	u := slices.Clone(p.target)
	for _, b := range p.replicas {
		if !slices.Contains(u, b) {
			u = append(u, b)
		}
	}
	return u
}

func (p *partition) adding() []int32 {
	var out []int32
	for _, b := range p.target {
		if !slices.Contains(p.replicas, b) {
			out = append(out, b)
		}
	}
	return out
}

// isr is the replicas in sync: those up, and adding ones fully copied.
func (m *model) isr(p *partition) []int32 {
	var out []int32
	for _, b := range p.union() {
		if !m.up(b) {
			continue
		}
		if (slices.Contains(p.replicas, b) && p.behind[b] == 0) || p.copied[b] >= p.size {
			out = append(out, b)
		}
	}
	return out
}

// elect keeps the leader when it is up and a replica, and otherwise takes
// the first replica in sync (-1 when none is: offline).
func (m *model) elect(p *partition) {
	isr := m.isr(p)
	if slices.Contains(isr, p.leader) && slices.Contains(p.replicas, p.leader) {
		return
	}
	p.leader = -1
	for _, b := range p.replicas {
		if slices.Contains(isr, b) {
			p.leader = b
			return
		}
	}
}

// advance moves every copy in flight on to now, at the rates in force
// since the last call (they change only at calls), and completes the
// reassignments whose copies are done.
func (m *model) advance(now time.Time) {
	dt := now.Sub(m.last).Seconds()
	m.last = now
	if dt <= 0 {
		return
	}
	for _, id := range m.brokerIDs() {
		if b := m.brokers[id]; !b.startsAt.IsZero() && !now.Before(b.startsAt) {
			b.running, b.startsAt = true, time.Time{}
		}
	}
	incoming := map[int32]int{} // throttled copies into each broker
	for _, p := range m.parts {
		for _, b := range p.fetching() {
			if m.throttled(p, b) {
				incoming[b]++
			}
		}
	}
	for _, p := range m.parts {
		if p.leader >= 0 {
			for _, b := range p.fetching() {
				if !m.up(b) {
					continue
				}
				rate := float64(unthrottledRate)
				if m.throttled(p, b) {
					rate = float64(m.rates[b]) / float64(incoming[b])
				}
				if n, ok := p.behind[b]; ok {
					if p.behind[b] = n - int64(rate*dt); p.behind[b] <= 0 {
						delete(p.behind, b)
					}
					continue
				}
				p.copied[b] = min(p.size, p.copied[b]+int64(rate*dt))
			}
		}
		m.complete(p)
	}
}

// fetching are the replicas of p that copy from its leader: the ones a
// reassignment adds, and the ones behind.
func (p *partition) fetching() []int32 {
	out := p.adding()
	for _, b := range p.replicas {
		if p.behind[b] > 0 {
			out = append(out, b)
		}
	}
	return out
}

// throttled says whether the copy of p onto b runs at b's throttle: the
// follower entry is there and b has a rate.
func (m *model) throttled(p *partition, b int32) bool {
	return m.rates[b] > 0 && slices.Contains(m.followThr[p.key.topic], fmt.Sprintf("%d:%d", p.key.part, b))
}

// complete ends p's reassignment once every target replica is up and in
// sync, as the controller does.
func (m *model) complete(p *partition) {
	if p.target == nil {
		return
	}
	for _, b := range p.target {
		if !m.up(b) || p.behind[b] > 0 || (!slices.Contains(p.replicas, b) && p.copied[b] < p.size) {
			return
		}
	}
	if m.lag > 0 {
		// What a broker showed the moment before: every replica of the
		// union, in sync as they were, under the leader of then.
		p.stale, p.staleISR, p.staleLeader, p.staleUntil = p.union(), m.isr(p), p.leader, m.last.Add(m.lag)
	}
	p.replicas, p.target, p.copied = p.target, nil, nil
	m.elect(p)
}

// used is what each broker's disk holds, counting every copy in flight
// whole on its destination (the planner's reservation).
func (m *model) used() map[int32]int64 {
	out := map[int32]int64{}
	for _, p := range m.parts {
		for _, b := range p.union() {
			out[b] += p.size
		}
	}
	return out
}

func (m *model) holds(id int32) []string {
	var out []string
	for _, p := range m.parts {
		if slices.Contains(p.union(), id) {
			out = append(out, p.key.String())
		}
	}
	return out
}

// kill stops a broker's process: it leaves every ISR and leads nothing.
func (m *model) kill(b *broker) {
	b.running, b.startsAt = false, time.Time{}
	for _, p := range m.parts {
		m.elect(p)
	}
}

// reuse brings a dead broker back under its id with an empty disk: every
// replica it holds fetches everything again.
func (m *model) reuse(b *broker) {
	b.running, b.killed, b.doomed = true, false, false
	for _, p := range m.parts {
		if slices.Contains(p.replicas, b.id) {
			if p.behind == nil {
				p.behind = map[int32]int64{}
			}
			p.behind[b.id] = max(p.size, 1)
		}
		m.elect(p)
	}
}

func (m *model) revive(b *broker) {
	b.running, b.killed = true, false
	for _, p := range m.parts {
		m.elect(p)
	}
}

func (m *model) snapshot() engine.Cluster {
	var c engine.Cluster
	used := m.used()
	for _, b := range m.registered() {
		c.Brokers = append(c.Brokers, engine.Broker{ID: b.id, Rack: b.rack, CapacityBytes: b.capacity, UsedBytes: used[b.id], Alive: b.running})
	}
	for _, p := range m.parts {
		c.Partitions = append(c.Partitions, engine.Partition{Topic: p.key.topic, Partition: p.key.part, Replicas: p.union(), SizeBytes: p.size})
	}
	return c
}

// placementView is the cluster as a placement reads it: like snapshot,
// but a partition being reassigned with the replicas it heads for (Kafka's
// adapter reads them from ListPartitionReassignments).
func (m *model) placementView() engine.Cluster {
	c := m.snapshot()
	for i, p := range c.Partitions {
		if mp := m.part(partKey{p.Topic, p.Partition}); mp != nil && mp.target != nil {
			c.Partitions[i].Replicas = slices.Clone(mp.target)
		}
	}
	return c
}

// inFlight describes the reassignments in flight, for a failure's report.
func (m *model) inFlight() string {
	var out []string
	for _, p := range m.parts {
		if p.target != nil {
			out = append(out, fmt.Sprintf("%s %v -> %v (copied %v of %d, leader %d)", p.key, p.replicas, p.target, p.copied, p.size, p.leader))
		}
	}
	return strings.Join(out, "; ")
}

type storedOp struct {
	id        string
	phase     executor.Phase
	done      bool
	lastError string
}
