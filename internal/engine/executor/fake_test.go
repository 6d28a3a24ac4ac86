package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// fakeCluster is an in-memory model of the parts of Kafka the executor
// touches, for testing the state machine's decisions: which moves it
// submits, when, and what it leaves behind. It is not evidence that Kafka
// behaves so; the acceptance tests run the same executor on a real cluster.
type fakeCluster struct {
	mu sync.Mutex

	brokers map[int32]*fakeBroker
	parts   map[string]*fakePartition // "topic/p"
	// brokersErr fails every read of the brokers.
	brokersErr error
	// reassignPolls is how many Partitions calls a reassignment takes;
	// slowParts adds more for some partitions ("topic/p").
	reassignPolls int
	slowParts     map[string]int

	rates     map[int32]int64
	leaderThr map[string][]string // topic -> entries
	followThr map[string][]string
	// unthrottled lists the copies a listing of the reassignments in
	// flight found without their throttle entries, and throttle changes
	// that ran beside a removal.
	unthrottled              []string
	throttling, unthrottling int

	submitted   map[string]int // partition -> number of AlterAssignments entries
	submissions int
	unregister  []int32
	elections   int

	// snapshotLag hides brokers above this id from the next Snapshot calls,
	// as a broker's metadata lags the controller's registrations.
	snapshotLag     int
	snapshotMaxSeen int32

	// metadataLag is how many Partitions calls still show a finished
	// reassignment's old and new replicas together, as a broker whose
	// metadata lags the controller does; Reassignments no longer lists it.
	metadataLag int
	// noGuard makes the fake a Kafka before 4.0, without the replication
	// factor guard of KIP-860; guardAsks counts the partitions asked.
	noGuard   bool
	guardAsks int

	// catchUp counts, per broker back with an empty disk, the Partitions
	// calls until it rejoins the ISR of its partitions.
	catchUp map[int32]int

	// noCordon makes the fake a Kafka before 4.3, without
	// cordoned.log.dirs.
	noCordon bool
	cordoned map[int32]bool
	// cordonLag is how many AlterAssignments calls still see a cordon
	// after it is lifted, as the controller learns of it from the next
	// heartbeat; staleCordon counts them down per broker.
	cordonLag      int
	staleCordon    map[int32]int
	cordonRefusals int
	// cordonLog records each SetCordon call, with the number of
	// AlterAssignments calls made before it.
	cordonLog []string

	// hooks
	onAlter func(n int) error // called before each AlterAssignments, n = call number
	// onAssign sees each AlterAssignments call's assignments, before they
	// are taken.
	onAssign func(as []executor.Assignment)
	// onThrottle is called once ThrottleReplicas has applied its entries.
	onThrottle func()
	onPoll     func(n int) // called on each Partitions call
	polls      int
}

type fakeBroker struct {
	id       int32
	rack     string
	fenced   bool
	capacity int64
}

type fakePartition struct {
	topic    string
	part     int32
	replicas []int32
	isr      []int32
	leader   int32
	size     int64
	target   []int32 // non-nil while reassigning
	left     int
	// stale is what Partitions still shows for staleLeft more polls after
	// a reassignment ended (metadataLag).
	stale     []int32
	staleLeft int
}

func key(t string, p int32) string { return fmt.Sprintf("%s/%d", t, p) }

func newFakeCluster(racks []string, brokers int) *fakeCluster {
	f := &fakeCluster{
		brokers: map[int32]*fakeBroker{}, parts: map[string]*fakePartition{}, reassignPolls: 2,
		rates: map[int32]int64{}, leaderThr: map[string][]string{}, followThr: map[string][]string{},
		submitted: map[string]int{}, cordoned: map[int32]bool{}, staleCordon: map[int32]int{},
	}
	for i := 1; i <= brokers; i++ {
		f.brokers[int32(i)] = &fakeBroker{id: int32(i), rack: racks[(i-1)%len(racks)], capacity: 1 << 40}
	}
	return f
}

// addTopic places partitions round-robin over the first brokers.
func (f *fakeCluster) addTopic(topic string, partitions, rf int, size int64) {
	ids := f.brokerIDs()
	for p := 0; p < partitions; p++ {
		var rs []int32
		for r := 0; r < rf; r++ {
			rs = append(rs, ids[(p+r)%len(ids)])
		}
		f.parts[key(topic, int32(p))] = &fakePartition{topic: topic, part: int32(p), replicas: rs, isr: slices.Clone(rs), leader: rs[0], size: size}
	}
}

func (f *fakeCluster) brokerIDs() []int32 {
	var ids []int32
	for id := range f.brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (f *fakeCluster) sortedParts() []*fakePartition {
	var ps []*fakePartition
	for _, p := range f.parts {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].topic != ps[j].topic {
			return ps[i].topic < ps[j].topic
		}
		return ps[i].part < ps[j].part
	})
	return ps
}

func (f *fakeCluster) Snapshot(context.Context) (engine.Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var c engine.Cluster
	lagging := f.snapshotLag > 0
	if lagging {
		f.snapshotLag--
	}
	for _, id := range f.brokerIDs() {
		b := f.brokers[id]
		if lagging && id > f.snapshotMaxSeen {
			continue
		}
		// As internal/kafka converts it: a fenced broker stays, not alive.
		c.Brokers = append(c.Brokers, engine.Broker{ID: id, Rack: b.rack, CapacityBytes: b.capacity, Alive: !b.fenced})
	}
	// Metadata lists a partition being reassigned with its old and new
	// replicas together, and so does a snapshot read from it.
	for _, p := range f.sortedParts() {
		c.Partitions = append(c.Partitions, engine.Partition{Topic: p.topic, Partition: p.part, Replicas: p.union(), SizeBytes: p.size})
	}
	return c, nil
}

func (f *fakeCluster) Partitions(context.Context) ([]executor.PartitionStatus, error) {
	f.mu.Lock()
	f.polls++
	n := f.polls
	hook := f.onPoll
	f.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []executor.PartitionStatus
	for id, left := range f.catchUp {
		if f.catchUp[id] = left - 1; left > 1 {
			continue
		}
		delete(f.catchUp, id)
		for _, p := range f.parts {
			if slices.Contains(p.replicas, id) && !slices.Contains(p.isr, id) {
				p.isr = append(p.isr, id)
			}
		}
	}
	for _, p := range f.sortedParts() {
		if p.target != nil {
			if f.allUp(p.target) {
				p.left--
			}
			if p.left <= 0 {
				p.stale, p.staleLeft = p.union(), f.metadataLag
				p.replicas, p.isr, p.target = p.target, slices.Clone(p.target), nil
				if !slices.Contains(p.replicas, p.leader) {
					p.leader = p.replicas[0]
				}
			}
		}
		replicas := p.union()
		if p.staleLeft > 0 && p.target == nil {
			p.staleLeft--
			replicas = slices.Clone(p.stale)
		}
		out = append(out, executor.PartitionStatus{Topic: p.topic, Partition: p.part, Replicas: replicas, ISR: slices.Clone(p.isr), Leader: p.leader})
	}
	return out, nil
}

func (f *fakeCluster) allUp(ids []int32) bool {
	for _, id := range ids {
		if b := f.brokers[id]; b == nil || b.fenced {
			return false
		}
	}
	return true
}

func (p *fakePartition) union() []int32 {
	u := slices.Clone(p.replicas)
	for _, b := range p.target {
		if !slices.Contains(u, b) {
			u = append(u, b)
		}
	}
	return u
}

func (f *fakeCluster) Reassignments(context.Context) ([]executor.Reassignment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []executor.Reassignment
	for _, p := range f.sortedParts() {
		if p.target == nil {
			continue
		}
		r := executor.Reassignment{Topic: p.topic, Partition: p.part, Replicas: p.union()}
		for _, b := range p.target {
			if !slices.Contains(p.replicas, b) {
				r.Adding = append(r.Adding, b)
			}
		}
		for _, b := range p.replicas {
			if !slices.Contains(p.target, b) {
				r.Removing = append(r.Removing, b)
			}
		}
		if len(r.Adding) > 0 {
			// A copy in flight is throttled on both ends: the replicas it
			// fetches from as leaders, the new ones as followers.
			for _, b := range p.replicas {
				if e := fmt.Sprintf("%d:%d", p.part, b); !slices.Contains(f.leaderThr[p.topic], e) {
					f.unthrottled = append(f.unthrottled, fmt.Sprintf("%s leader %s", p.topic, e))
				}
			}
			for _, b := range r.Adding {
				if e := fmt.Sprintf("%d:%d", p.part, b); !slices.Contains(f.followThr[p.topic], e) {
					f.unthrottled = append(f.unthrottled, fmt.Sprintf("%s follower %s", p.topic, e))
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func (f *fakeCluster) Brokers(context.Context) ([]executor.BrokerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.brokersErr != nil {
		return nil, f.brokersErr
	}
	var out []executor.BrokerStatus
	for _, id := range f.brokerIDs() {
		b := f.brokers[id]
		out = append(out, executor.BrokerStatus{ID: id, Rack: b.rack, Fenced: b.fenced})
	}
	return out, nil
}

func (f *fakeCluster) AlterAssignments(_ context.Context, as []executor.Assignment) error {
	f.mu.Lock()
	f.submissions++
	n := f.submissions
	hook, assign := f.onAlter, f.onAssign
	f.mu.Unlock()
	if hook != nil {
		if err := hook(n); err != nil {
			return err
		}
	}
	if assign != nil {
		assign(as)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range as {
		for _, b := range a.Replicas {
			if f.cordoned[b] || f.staleCordon[b] > 0 {
				// As Kafka 4.4 does, even for a replica the broker holds;
				// a lifted cordon reaches the controller a moment later.
				for id, n := range f.staleCordon {
					f.staleCordon[id] = n - 1
				}
				f.cordonRefusals++
				return fmt.Errorf("%w: %s p%d: INVALID_REPLICA_ASSIGNMENT: the assignment includes broker %d, but all its log directories are cordoned",
					executor.ErrCordoned, a.Topic, a.Partition, b)
			}
		}
	}
	for _, a := range as {
		p := f.parts[key(a.Topic, a.Partition)]
		if p == nil {
			return fmt.Errorf("%s p%d: unknown partition", a.Topic, a.Partition)
		}
		f.submitted[key(a.Topic, a.Partition)]++
		if engine.SameMembers(p.replicas, a.Replicas) && p.target == nil {
			p.replicas = slices.Clone(a.Replicas) // a reorder completes at once
			continue
		}
		p.target, p.left = slices.Clone(a.Replicas), f.reassignPolls+f.slowParts[key(a.Topic, a.Partition)]
	}
	return nil
}

func (f *fakeCluster) BrokerThrottles(_ context.Context, brokers []int32) (map[int32]executor.BrokerThrottle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int32]executor.BrokerThrottle{}
	for _, b := range brokers {
		out[b] = executor.BrokerThrottle{Leader: f.rates[b], Follower: f.rates[b]}
	}
	return out, nil
}

// ReassignKeepingReplicationFactor refuses, as the controller does with
// the guard of KIP-860, a target whose size differs from the partition's
// replica count (its target's while it moves), and submits the others.
func (f *fakeCluster) ReassignKeepingReplicationFactor(ctx context.Context, as []executor.Assignment) ([]executor.Assignment, error) {
	f.mu.Lock()
	if f.noGuard {
		f.mu.Unlock()
		return nil, fmt.Errorf("broker 1: %w", executor.ErrNoReplicationFactorGuard)
	}
	f.guardAsks += len(as)
	var taken []executor.Assignment
	var refused []string
	for _, a := range as {
		p := f.parts[key(a.Topic, a.Partition)]
		if p == nil {
			f.mu.Unlock()
			return nil, fmt.Errorf("%s p%d: UNKNOWN_TOPIC_OR_PARTITION", a.Topic, a.Partition)
		}
		count := len(p.replicas)
		if p.target != nil {
			count = len(p.target)
		}
		// As Kafka, per partition: a cordoned broker in the target is
		// refused before the replication factor is looked at (KIP-1066).
		if slices.ContainsFunc(a.Replicas, func(b int32) bool { return f.cordoned[b] }) {
			refused = append(refused, fmt.Sprintf("%s p%d: INVALID_REPLICA_ASSIGNMENT: a broker of %v is cordoned", a.Topic, a.Partition, a.Replicas))
			continue
		}
		if count == len(a.Replicas) {
			taken = append(taken, a)
		}
	}
	f.mu.Unlock()
	var err error
	if len(refused) > 0 {
		err = fmt.Errorf("%w: %s", executor.ErrCordoned, strings.Join(refused, "; "))
	}
	if len(taken) == 0 {
		return nil, err
	}
	return taken, errors.Join(f.AlterAssignments(ctx, taken), err)
}

// CancelReassignments puts each partition back on its replicas before the
// move, as the controller does (KIP-455).
func (f *fakeCluster) CancelReassignments(_ context.Context, as []executor.Assignment) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range as {
		if p := f.parts[key(a.Topic, a.Partition)]; p != nil {
			p.target = nil
		}
	}
	return nil
}

func (f *fakeCluster) SetThrottle(_ context.Context, brokers []int32, rate int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range brokers {
		if f.brokers[b] == nil || f.brokers[b].fenced {
			return fmt.Errorf("broker %d is not available to take its config", b)
		}
		f.rates[b] = rate
	}
	return nil
}

func (f *fakeCluster) ClearThrottle(_ context.Context, brokers []int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	// As SetThrottle: a broker takes its own config, and Kafka refuses a
	// change of one broker's config sent to another.
	for _, b := range brokers {
		if br := f.brokers[b]; br != nil && br.fenced {
			return fmt.Errorf("broker %d is not available to take its config", b)
		}
	}
	for _, b := range brokers {
		delete(f.rates, b)
	}
	return nil
}

func (f *fakeCluster) ThrottleReplicas(ctx context.Context, ts []executor.ThrottledReplicas, record func([]executor.ThrottledReplicas) error) error {
	f.mu.Lock()
	var adding []executor.ThrottledReplicas
	for _, t := range ts {
		a := executor.ThrottledReplicas{Topic: t.Topic}
		for _, e := range t.Leader {
			if !slices.Contains(f.leaderThr[t.Topic], e) && !slices.Contains(a.Leader, e) {
				a.Leader = append(a.Leader, e)
			}
		}
		for _, e := range t.Follower {
			if !slices.Contains(f.followThr[t.Topic], e) && !slices.Contains(a.Follower, e) {
				a.Follower = append(a.Follower, e)
			}
		}
		if len(a.Leader)+len(a.Follower) > 0 {
			adding = append(adding, a)
		}
	}
	f.mu.Unlock()
	if len(adding) == 0 {
		return nil
	}
	if err := record(adding); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unthrottling > 0 {
		f.unthrottled = append(f.unthrottled, "replicas throttled while a removal ran")
	}
	f.throttling++
	defer func() { f.throttling-- }()
	for _, a := range adding {
		f.leaderThr[a.Topic] = append(f.leaderThr[a.Topic], a.Leader...)
		f.followThr[a.Topic] = append(f.followThr[a.Topic], a.Follower...)
	}
	if hook := f.onThrottle; hook != nil {
		f.mu.Unlock()
		hook()
		f.mu.Lock()
	}
	// A context that ends once the brokers took the change loses the
	// answer, as Kafka's admin client does.
	return ctx.Err()
}

func (f *fakeCluster) UnthrottleReplicas(_ context.Context, ts []executor.ThrottledReplicas) error {
	// Kafka's removal reads the lists it emptied and deletes them: an
	// APPEND landing in between is lost, so none may run beside it. The
	// pause gives one the chance to.
	f.mu.Lock()
	if f.throttling > 0 {
		f.unthrottled = append(f.unthrottled, "a removal ran while replicas were throttled")
	}
	f.unthrottling++
	f.mu.Unlock()
	time.Sleep(time.Millisecond)
	f.mu.Lock()
	defer f.mu.Unlock()
	defer func() { f.unthrottling-- }()
	for _, t := range ts {
		f.leaderThr[t.Topic] = slices.DeleteFunc(f.leaderThr[t.Topic], func(e string) bool { return slices.Contains(t.Leader, e) })
		f.followThr[t.Topic] = slices.DeleteFunc(f.followThr[t.Topic], func(e string) bool { return slices.Contains(t.Follower, e) })
		if len(f.leaderThr[t.Topic]) == 0 {
			delete(f.leaderThr, t.Topic)
		}
		if len(f.followThr[t.Topic]) == 0 {
			delete(f.followThr, t.Topic)
		}
	}
	return nil
}

func (f *fakeCluster) ElectPreferredLeaders(_ context.Context, as []executor.Assignment) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.elections++
	for _, a := range as {
		p := f.parts[key(a.Topic, a.Partition)]
		if p != nil && slices.Contains(p.isr, p.replicas[0]) {
			p.leader = p.replicas[0]
		}
	}
	return nil
}

func (f *fakeCluster) UnregisterBroker(_ context.Context, id int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.brokers[id]; b != nil && !b.fenced {
		return fmt.Errorf("broker %d is still running", id)
	}
	delete(f.brokers, id)
	// As in Kafka, the cordon stays under the id
	// (TestCordonOutlivesTheBrokerRegistration).
	f.unregister = append(f.unregister, id)
	return nil
}

func (f *fakeCluster) CordonSupported(context.Context) (bool, error) {
	return !f.noCordon, nil
}

func (f *fakeCluster) SetCordon(_ context.Context, brokers []int32, on bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(brokers) == 0 {
		return nil
	}
	if f.noCordon {
		return fmt.Errorf("unknown config %q", "cordoned.log.dirs")
	}
	for _, b := range brokers {
		if f.brokers[b] == nil || f.brokers[b].fenced {
			return fmt.Errorf("broker %d is not available to take its config", b)
		}
	}
	for _, b := range brokers {
		if on {
			f.cordoned[b] = true
		} else {
			delete(f.cordoned, b)
			f.staleCordon[b] = f.cordonLag
		}
	}
	f.cordonLog = append(f.cordonLog, fmt.Sprintf("%v %v after %d submissions", brokers, on, f.submissions))
	return nil
}

// cordonsLeft lists the brokers still cordoned.
func (f *fakeCluster) cordonsLeft() []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int32
	for b := range f.cordoned {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

// createTopic is someone else creating a topic: like the controller, it
// places replicas round-robin over the unfenced brokers that are not
// cordoned.
func (f *fakeCluster) createTopic(topic string, partitions, rf int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []int32
	for _, id := range f.brokerIDs() {
		if !f.brokers[id].fenced && !f.cordoned[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) < rf {
		return fmt.Errorf("replication factor %d: only %d brokers are available", rf, len(ids))
	}
	for p := 0; p < partitions; p++ {
		var rs []int32
		for r := 0; r < rf; r++ {
			rs = append(rs, ids[(p+r)%len(ids)])
		}
		f.parts[key(topic, int32(p))] = &fakePartition{topic: topic, part: int32(p), replicas: rs, isr: slices.Clone(rs), leader: rs[0], size: 1}
	}
	return nil
}

// throttlesLeft describes every throttle still set, for assertions.
func (f *fakeCluster) throttlesLeft() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s []string
	for b, r := range f.rates {
		s = append(s, fmt.Sprintf("broker %d rate %d", b, r))
	}
	for t, es := range f.leaderThr {
		s = append(s, fmt.Sprintf("%s leader %v", t, es))
	}
	for t, es := range f.followThr {
		s = append(s, fmt.Sprintf("%s follower %v", t, es))
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}

// kill SIGKILLs a broker for good: fenced, out of every ISR, and no longer
// a leader.
func (f *fakeCluster) kill(id int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.brokers[id].fenced = true
	for _, p := range f.parts {
		p.isr = slices.DeleteFunc(p.isr, func(b int32) bool { return b == id })
		if p.leader == id {
			p.leader = p.isr[0]
		}
	}
}

// fakeScaler adds brokers (racks round-robin) and fences removed ones, as
// the platform would stop them. The same count with brokers named is a
// replacement: a new broker in each named broker's rack, or, with reuse,
// the named brokers back under their ids with empty disks.
type fakeScaler struct {
	f     *fakeCluster
	racks []string
	calls []string
	err   error
	reuse bool
	// brokersErrAfter, when set, makes every later read of the brokers
	// fail, as a permission revoked mid-operation would.
	brokersErrAfter error
}

func (s *fakeScaler) ScaleTo(_ context.Context, n int, remove []int32) error {
	s.calls = append(s.calls, fmt.Sprintf("%d %v", n, remove))
	if s.err != nil {
		return s.err
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.brokersErr = s.brokersErrAfter
	next := int32(0)
	for id := range s.f.brokers {
		next = max(next, id)
	}
	if n == len(s.f.brokers) && len(remove) > 0 {
		for _, id := range remove {
			b := s.f.brokers[id]
			if s.reuse {
				b.fenced = false
				if s.f.catchUp == nil {
					s.f.catchUp = map[int32]int{}
				}
				s.f.catchUp[id] = 10
				continue
			}
			next++
			s.f.brokers[next] = &fakeBroker{id: next, rack: b.rack, capacity: 1 << 40}
		}
		return nil
	}
	for _, id := range remove {
		if b := s.f.brokers[id]; b != nil {
			b.fenced = true
		}
	}
	for len(s.f.brokers) < n {
		next++
		s.f.brokers[next] = &fakeBroker{id: next, rack: s.racks[int(next-1)%len(s.racks)], capacity: 1 << 40}
	}
	return nil
}

// memStore round-trips operations through their stored form, as the Kafka
// store does.
type memStore struct {
	mu    sync.Mutex
	ops   map[string][]byte
	saves int
}

func (m *memStore) Load(_ context.Context, key string) (*executor.Operation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.ops[key]
	if !ok {
		return nil, nil
	}
	return executor.DecodeOperation(b)
}

func (m *memStore) List(ctx context.Context) ([]*executor.Operation, error) {
	m.mu.Lock()
	keys := make([]string, 0, len(m.ops))
	for k := range m.ops {
		keys = append(keys, k)
	}
	m.mu.Unlock()
	slices.Sort(keys)
	var out []*executor.Operation
	for _, k := range keys {
		op, err := m.Load(ctx, k)
		if err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	return out, nil
}

func (m *memStore) Save(_ context.Context, op *executor.Operation) error {
	b, err := executor.EncodeOperation(op)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ops == nil {
		m.ops = map[string][]byte{}
	}
	m.ops[op.Key] = b
	m.saves++
	return nil
}

// fakeClock advances only when slept on.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	// A wait that never ends would hang the test; a day of fake time is
	// the stand-in for the resource's timeout.
	if c.now.Sub(time.Unix(0, 0)) > 24*time.Hour {
		return context.DeadlineExceeded
	}
	return nil
}

func (m *memStore) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ops, key)
	return nil
}
