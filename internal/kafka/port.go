package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// Port adapts a Client to the executor's Kafka port, converting kadm's view
// into the engine's plain types.
type Port struct{ c *Client }

var _ executor.Kafka = (*Port)(nil)

// Port returns the executor's view of this client.
func (c *Client) Port() *Port { return &Port{c: c} }

// EngineCluster converts a snapshot into the planner's model. A broker's
// capacity is the size of the volumes holding its log dirs and its used
// bytes what those volumes have in use (Kafka's or not), because the disk
// that fills up is the volume, not the log dir. A fenced broker, and any
// broker a replica names that is not registered, is kept, marked not alive:
// its replicas still count, and a plan made while a broker is down must
// know it.
func EngineCluster(s Snapshot) engine.Cluster {
	var c engine.Cluster
	for _, b := range s.Brokers {
		eb := engine.Broker{ID: b.ID, Rack: b.Rack, Alive: !b.Fenced}
		if b.CapacityBytes > 0 {
			eb.CapacityBytes = b.CapacityBytes
			eb.UsedBytes = b.CapacityBytes - b.FreeBytes
		}
		c.Brokers = append(c.Brokers, eb)
	}
	for _, p := range s.Partitions {
		c.Partitions = append(c.Partitions, engine.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: append([]int32(nil), p.Replicas...),
			SizeBytes: p.SizeBytes, CopyBytes: p.CopyBytes, RemoteBytes: p.RemoteBytes, PendingUploadUnknown: p.PendingUploadUnknown})
	}
	c.Brokers = withOfflineBrokers(c.Brokers, c.Partitions)
	return c
}

// withOfflineBrokers adds, for every replica on a broker not in brokers (a
// stopped broker Metadata does not list), that broker, not alive, and
// returns the brokers sorted by id. The engine never places on it.
func withOfflineBrokers(brokers []engine.Broker, parts []engine.Partition) []engine.Broker {
	known := make(map[int32]bool, len(brokers))
	for _, b := range brokers {
		known[b.ID] = true
	}
	for _, p := range parts {
		for _, r := range p.Replicas {
			if !known[r] {
				known[r] = true
				brokers = append(brokers, engine.Broker{ID: r, Alive: false})
			}
		}
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].ID < brokers[j].ID })
	return brokers
}

func (p *Port) Snapshot(ctx context.Context) (engine.Cluster, error) {
	s, err := p.c.Snapshot(ctx)
	if err != nil {
		return engine.Cluster{}, err
	}
	return EngineCluster(s), nil
}

func (p *Port) Partitions(ctx context.Context) ([]executor.PartitionStatus, error) {
	var out []executor.PartitionStatus
	err := p.c.readAny(ctx, "reading partition states", func(ctx context.Context) error {
		md, err := p.c.admin.Metadata(ctx)
		if err != nil {
			return err
		}
		for _, t := range md.Topics.Sorted() {
			if skip, err := topicFailed(t); skip {
				continue
			} else if err != nil {
				return err
			}
			for _, pd := range t.Partitions.Sorted() {
				out = append(out, executor.PartitionStatus{Topic: t.Topic, Partition: pd.Partition, Replicas: pd.Replicas, ISR: pd.ISR, Leader: pd.Leader})
			}
		}
		return nil
	})
	return out, err
}

func (p *Port) Reassignments(ctx context.Context) ([]executor.Reassignment, error) {
	rs, err := p.c.ListReassignments(ctx)
	out := make([]executor.Reassignment, len(rs))
	for i, r := range rs {
		out[i] = executor.Reassignment{Topic: r.Topic, Partition: r.Partition, Replicas: r.Replicas, Adding: r.Adding, Removing: r.Removing}
	}
	return out, err
}

func (p *Port) Brokers(ctx context.Context) ([]executor.BrokerStatus, error) {
	rs, err := p.c.Registrations(ctx)
	out := make([]executor.BrokerStatus, len(rs))
	for i, r := range rs {
		out[i] = executor.BrokerStatus{ID: r.ID, Rack: r.Rack, Fenced: r.Fenced}
	}
	return out, err
}

func toAssignments(as []executor.Assignment) []Assignment {
	out := make([]Assignment, len(as))
	for i, a := range as {
		out[i] = Assignment{Topic: a.Topic, Partition: a.Partition, Replicas: a.Replicas}
	}
	return out
}

func (p *Port) AlterAssignments(ctx context.Context, as []executor.Assignment) error {
	err := p.c.AlterAssignments(ctx, toAssignments(as))
	// Kafka 4.4 says INVALID_REPLICA_ASSIGNMENT "... includes broker 4, but
	// all its log directories are cordoned."; the code alone is also any
	// other invalid target.
	return withCordoned(err)
}

// withCordoned wraps executor.ErrCordoned around a refusal of an explicit
// assignment that names a cordoned broker.
func withCordoned(err error) error {
	if err != nil && strings.Contains(err.Error(), "cordoned") {
		return fmt.Errorf("%w: %w", executor.ErrCordoned, err)
	}
	return err
}

func (p *Port) ReassignKeepingReplicationFactor(ctx context.Context, as []executor.Assignment) ([]executor.Assignment, error) {
	taken, err := p.c.ReassignKeepingReplicationFactor(ctx, toAssignments(as))
	if errors.Is(err, ErrNoReplicationFactorGuard) {
		err = fmt.Errorf("%w: %w", executor.ErrNoReplicationFactorGuard, err)
	}
	out := make([]executor.Assignment, len(taken))
	for i, a := range taken {
		out[i] = executor.Assignment{Topic: a.Topic, Partition: a.Partition, Replicas: a.Replicas}
	}
	return out, withCordoned(err)
}

func (p *Port) CancelReassignments(ctx context.Context, as []executor.Assignment) error {
	return p.c.CancelReassignments(ctx, toAssignments(as))
}

func (p *Port) BrokerThrottles(ctx context.Context, brokers []int32) (map[int32]executor.BrokerThrottle, error) {
	rates, err := p.c.BrokerThrottles(ctx, brokers)
	out := make(map[int32]executor.BrokerThrottle, len(rates))
	for b, r := range rates {
		out[b] = executor.BrokerThrottle{Leader: r[0], Follower: r[1]}
	}
	return out, err
}

func (p *Port) SetThrottle(ctx context.Context, brokers []int32, bytesPerSec int64) error {
	return p.c.SetBrokerThrottle(ctx, brokers, bytesPerSec)
}

func (p *Port) ClearThrottle(ctx context.Context, brokers []int32) error {
	return p.c.ClearBrokerThrottle(ctx, brokers)
}

func (p *Port) ThrottleReplicas(ctx context.Context, ts []executor.ThrottledReplicas, record func([]executor.ThrottledReplicas) error) error {
	in := make([]ThrottledReplicas, len(ts))
	for i, t := range ts {
		in[i] = ThrottledReplicas(t)
	}
	_, err := p.c.addThrottledReplicas(ctx, in, func(adding []ThrottledReplicas) error {
		out := make([]executor.ThrottledReplicas, len(adding))
		for i, a := range adding {
			out[i] = executor.ThrottledReplicas(a)
		}
		return record(out)
	})
	return err
}

func (p *Port) UnthrottleReplicas(ctx context.Context, ts []executor.ThrottledReplicas) error {
	in := make([]ThrottledReplicas, len(ts))
	for i, t := range ts {
		in[i] = ThrottledReplicas(t)
	}
	return p.c.RemoveThrottledReplicas(ctx, in)
}

func (p *Port) ElectPreferredLeaders(ctx context.Context, as []executor.Assignment) error {
	return p.c.ElectPreferredLeaders(ctx, toAssignments(as))
}

func (p *Port) UnregisterBroker(ctx context.Context, id int32) error {
	return p.c.UnregisterBroker(ctx, id)
}

func (p *Port) CordonSupported(ctx context.Context) (bool, error) {
	return p.c.CordonSupported(ctx)
}

func (p *Port) SetCordon(ctx context.Context, brokers []int32, on bool) error {
	return p.c.SetCordon(ctx, brokers, on)
}

// ReplicaSizes reads the size of each named replica's log on its broker,
// asking for those partitions only. A replica its broker does not hold
// yet is left out, and so is the future copy of a move between a broker's
// own log dirs.
func (p *Port) ReplicaSizes(ctx context.Context, rs []executor.Replica) (map[executor.Replica]int64, error) {
	out := make(map[executor.Replica]int64, len(rs))
	if len(rs) == 0 {
		return out, nil
	}
	want := make(map[executor.Replica]bool, len(rs))
	set := kadm.TopicsSet{}
	for _, r := range rs {
		want[r] = true
		set.Add(r.Topic, r.Partition)
	}
	err := p.c.withTimeout(ctx, "reading the sizes of the replicas being copied", func(ctx context.Context) error {
		dirs, err := p.c.admin.DescribeAllLogDirs(ctx, set)
		if err != nil {
			return err
		}
		for broker, ds := range dirs {
			for _, d := range ds {
				if d.Err != nil {
					return fmt.Errorf("log dir %s on broker %d: %w", d.Dir, broker, d.Err)
				}
				for topic, ps := range d.Topics {
					for part, lp := range ps {
						if r := (executor.Replica{Topic: topic, Partition: part, Broker: broker}); want[r] && !lp.IsFuture {
							out[r] += lp.Size
						}
					}
				}
			}
		}
		return nil
	})
	return out, err
}

// OperationStore keeps executor operations in the operations topic, in
// the executor's versioned record form (EncodeOperation, DecodeOperation).
// The topic is created on the first save.
type OperationStore struct {
	c    *Client
	once sync.Once
	err  error
}

var _ executor.Store = (*OperationStore)(nil)

// Operations returns the store of executor operations.
func (c *Client) Operations() *OperationStore { return &OperationStore{c: c} }

// Load returns nil when the topic does not exist yet.
func (s *OperationStore) Load(ctx context.Context, key string) (*executor.Operation, error) {
	b, ok, err := s.c.GetOperation(ctx, key)
	if err != nil || !ok {
		return nil, err
	}
	return decodeOperation(key, b)
}

// decodeOperation reads a stored record of any version as one of the
// current version (executor.DecodeOperation).
func decodeOperation(key string, b []byte) (*executor.Operation, error) {
	op, err := executor.DecodeOperation(b)
	if err != nil {
		return nil, fmt.Errorf("operation %s in %s is not readable: %w", key, OperationsTopic, err)
	}
	return op, nil
}

// List returns every operation stored, sorted by key; none when the topic
// does not exist yet.
func (s *OperationStore) List(ctx context.Context) ([]*executor.Operation, error) {
	ops, err := s.c.FollowOperations().Poll(ctx)
	if errors.Is(err, ErrNoOperationsTopic) {
		return nil, nil
	}
	return ops, err
}

// OperationFeed reads the operations topic incrementally: each Poll reads
// only what was written since the previous one, so that following an
// operation every second does not read every stored plan again.
type OperationFeed struct {
	c   *Client
	log operationsLog
	ops map[string]*executor.Operation
}

// FollowOperations returns a feed whose first Poll reads the whole topic.
func (c *Client) FollowOperations() *OperationFeed {
	return &OperationFeed{c: c, ops: map[string]*executor.Operation{}}
}

// Poll returns the latest record of every operation, sorted by key. It
// returns ErrNoOperationsTopic when the topic does not exist.
func (f *OperationFeed) Poll(ctx context.Context) ([]*executor.Operation, error) {
	changed, exists, err := f.log.update(ctx, f.c, "reading the operations in "+OperationsTopic)
	if err != nil {
		return nil, err
	}
	for k, v := range changed {
		if v == nil {
			delete(f.ops, k)
			continue
		}
		op, err := decodeOperation(k, v)
		if err != nil {
			// Read it all again next time, so the error is not lost.
			f.log = operationsLog{}
			return nil, err
		}
		f.ops[k] = op
	}
	if !exists {
		return nil, ErrNoOperationsTopic
	}
	keys := make([]string, 0, len(f.ops))
	for k := range f.ops {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*executor.Operation, len(keys))
	for i, k := range keys {
		out[i] = f.ops[k]
	}
	return out, nil
}

// Ensure creates the topic when it is missing, and the operation lease's
// log (LeaseTopic) beside it. Call it before an operation snapshots the
// cluster, so the topics' own partitions are part of the plan (and a
// scale-in drains them too). Plans never call it: planning changes nothing
// on the cluster.
func (s *OperationStore) Ensure(ctx context.Context) error {
	s.once.Do(func() {
		regs, err := s.c.Registrations(ctx)
		if err != nil {
			s.err = err
			return
		}
		if s.err = s.c.EnsureOperationsTopic(ctx, len(regs)); s.err == nil {
			s.err = s.c.LeaseLog().Ensure(ctx)
		}
		if s.err == nil {
			// A topic just made has no leader for a moment: the first
			// record would wait on it anyway.
			s.err = s.c.AwaitTopicLeaders(ctx, OperationsTopic, 1)
		}
	})
	return s.err
}

func (s *OperationStore) Save(ctx context.Context, op *executor.Operation) error {
	if err := s.Ensure(ctx); err != nil {
		return err
	}
	b, err := executor.EncodeOperation(op)
	if err != nil {
		return err
	}
	return s.c.PutOperation(ctx, op.Key, b)
}

// Delete forgets the operation under key: a tombstone, so that compaction
// drops its record.
func (s *OperationStore) Delete(ctx context.Context, key string) error {
	return s.c.PutOperation(ctx, key, nil)
}
