package executor

import (
	"context"
	"errors"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// PartitionStatus is one partition as Kafka reports it now.
type PartitionStatus struct {
	Topic     string
	Partition int32
	// Replicas is the assignment; during a reassignment it is the union of
	// the old and new replicas.
	Replicas []int32
	ISR      []int32
	Leader   int32 // -1 when offline
}

// Reassignment is one partition reassignment in progress (KIP-455).
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Adding    []int32
	Removing  []int32
}

// target is the replica list the reassignment is heading for.
func (r Reassignment) target() []int32 {
	var out []int32
	for _, b := range r.Replicas {
		if !contains(r.Removing, b) {
			out = append(out, b)
		}
	}
	return out
}

// BrokerStatus is one registered broker.
type BrokerStatus struct {
	ID     int32
	Rack   string
	Fenced bool
}

// Assignment is the ordered replica list one partition should get.
type Assignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// ThrottledReplicas names, for one topic, the replicas a group throttles:
// Leader entries ("partition:broker") for the replicas that send, Follower
// entries for the ones that receive.
type ThrottledReplicas struct {
	Topic    string   `json:"topic"`
	Leader   []string `json:"leader,omitempty"`
	Follower []string `json:"follower,omitempty"`
}

// ErrCordoned is what AlterAssignments wraps when Kafka refused a target
// because it lists a cordoned broker (KIP-1066).
var ErrCordoned = errors.New("the assignment lists a cordoned broker")

// ErrNoReplicationFactorGuard is what ReassignKeepingReplicationFactor
// wraps when the cluster does not know the guard (Kafka before 4.0).
var ErrNoReplicationFactorGuard = errors.New("the cluster does not know the replication factor guard of KIP-860")

// Kafka is what the executor needs of the cluster.
type Kafka interface {
	// Snapshot reads brokers (with disk) and partitions (with sizes) for
	// planning.
	Snapshot(ctx context.Context) (engine.Cluster, error)
	Partitions(ctx context.Context) ([]PartitionStatus, error)
	Reassignments(ctx context.Context) ([]Reassignment, error)
	Brokers(ctx context.Context) ([]BrokerStatus, error)
	// AlterAssignments submits one AlterPartitionAssignments request. A
	// refusal because of a cordoned broker wraps ErrCordoned.
	AlterAssignments(ctx context.Context, as []Assignment) error
	// ReassignKeepingReplicationFactor submits as with Kafka's guard
	// against a change of replication factor (KIP-860, Kafka 4.0): the
	// controller, whose view no broker's metadata is ahead of, takes a
	// target only if the partition has as many replicas as it (a target
	// the partition has already is a no-op) and refuses the others,
	// changing nothing. It returns the assignments taken; it wraps
	// ErrNoReplicationFactorGuard, having sent nothing, when the cluster
	// does not know the guard.
	ReassignKeepingReplicationFactor(ctx context.Context, as []Assignment) ([]Assignment, error)
	// CancelReassignments cancels the partitions' reassignments in
	// flight (KIP-455): each goes back to its replicas before the move.
	CancelReassignments(ctx context.Context, parts []Assignment) error
	// BrokerThrottles reads the brokers' replication rates (0: none).
	BrokerThrottles(ctx context.Context, brokers []int32) (map[int32]BrokerThrottle, error)
	SetThrottle(ctx context.Context, brokers []int32, bytesPerSec int64) error
	ClearThrottle(ctx context.Context, brokers []int32) error
	// ThrottleReplicas adds the entries of ts that the topics lack, and
	// passes those to record before it adds them: only they are ours to
	// remove later, and a run killed between the two must still find them
	// recorded. It adds nothing if record fails.
	ThrottleReplicas(ctx context.Context, ts []ThrottledReplicas, record func(adding []ThrottledReplicas) error) error
	UnthrottleReplicas(ctx context.Context, ts []ThrottledReplicas) error
	ElectPreferredLeaders(ctx context.Context, parts []Assignment) error
	// UnregisterBroker removes a stopped broker's registration; a broker
	// that is not registered is not an error.
	UnregisterBroker(ctx context.Context, id int32) error
	// CordonSupported reports whether the brokers know the cordon of
	// KIP-1066 (Kafka 4.3+): with it, the controller places no new
	// replica on a cordoned broker.
	CordonSupported(ctx context.Context) (bool, error)
	// SetCordon cordons the brokers (on) or removes their cordon, and
	// returns once the controller has committed it; the brokers apply it
	// a moment later. Every broker named must be up.
	SetCordon(ctx context.Context, brokers []int32, on bool) error
}

// Placer creates partitions where the executor places them: what growing
// a topic needs of the cluster.
type Placer interface {
	// BeginPlacement reads the cluster as placement needs it and holds
	// this process's placement lock until Release, so that topics created
	// or grown at once (Terraform applies them in parallel) each see the
	// replicas placed before them, even ones the brokers do not show yet.
	BeginPlacement(ctx context.Context) (Placement, error)
	// AwaitPartitionsReady returns once every broker shows topic with
	// partitions partitions, each with a leader and a full ISR.
	AwaitPartitionsReady(ctx context.Context, topic string, partitions int) error
}

// Placement is the cluster held for one placement.
type Placement interface {
	// View is the cluster to place from: brokers with racks (offline ones
	// too, which the engine never places on) and every partition's
	// replicas, those of a partition being reassigned as it will have
	// them (its target). Sizes and disks are not read.
	View() engine.Cluster
	// CreateTopic creates topic with the placed partitions, numbered
	// 0..n-1, as an explicit assignment, and configs. A refusal because
	// of a cordoned broker wraps ErrCordoned.
	CreateTopic(ctx context.Context, topic string, parts []engine.Partition, configs map[string]string) error
	// CreatePartitions adds the placed partitions of every topic, which
	// follow the topic's current ones, in ONE CreatePartitions request with
	// an explicit assignment.
	CreatePartitions(ctx context.Context, added map[string][]engine.Partition) error
	// Release gives up the placement lock; calling it again does nothing.
	Release()
}

// TopicAdmin is what changing a topic's configs and deleting it need of
// the cluster; each call returns once every broker shows the change.
type TopicAdmin interface {
	// AlterTopicConfigs sets and deletes the topic's own configs
	// (IncrementalAlterConfigs: the others stay) and returns once every
	// broker serves the new values.
	AlterTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error
	// AwaitTopicConfigs returns once every broker serves set and none of
	// del as the topic's own configs.
	AwaitTopicConfigs(ctx context.Context, topic string, set map[string]string, del []string) error
	// DeleteTopic deletes the topic and returns once no broker lists it.
	DeleteTopic(ctx context.Context, topic string) error
	// AwaitTopicReady returns once every broker shows topic with
	// partitions partitions and rf replicas each, every one with a leader
	// and a full ISR.
	AwaitTopicReady(ctx context.Context, topic string, partitions, rf int) error
}

// Scaler asks the platform for a broker count. It blocks until the platform
// says the request is done; the executor then waits for Kafka to agree.
type Scaler interface {
	ScaleTo(ctx context.Context, brokerCount int, removeBrokerIDs []int32) error
}

// Replacer is a Scaler that asks for replacement brokers with a request of
// its own (a command method runs its scale-up command). A Scaler without it
// is asked ScaleTo with the unchanged count and the brokers named, as the
// HTTP scaling API defines a replacement.
type Replacer interface {
	ReplaceBrokers(ctx context.Context, brokerCount int, removeBrokerIDs []int32) error
}

// Settler is a Scaler whose platform carries a request out in the
// background (the HTTP scaling API): when an apply that asked for brokers
// is interrupted, the platform still adds them afterwards, and refuses
// another count until it is done. Cancelling such an operation waits for
// it (AwaitIdle) and then drains what it added, so that a revert ends at
// the count it asks for. Without it (a command, which the interrupted apply
// ran and stopped, or brokers started by other means) nothing is waited
// for.
type Settler interface {
	AwaitIdle(ctx context.Context) error
}

// BrokerThrottle is a broker's replication rates, bytes/s (0: none).
type BrokerThrottle struct {
	Leader, Follower int64
}

// Store persists operations by key.
type Store interface {
	// Load returns the operation stored under key, or nil.
	Load(ctx context.Context, key string) (*Operation, error)
	Save(ctx context.Context, op *Operation) error
}

// Ensurer is a Store that must be made before its first record (the
// operations topic): Scale and ChangeReplicationFactor ensure it first, so
// that nothing else has to change the cluster for it. Ensure is cheap once
// it has succeeded.
type Ensurer interface {
	Ensure(ctx context.Context) error
}

// Lister is a Store that can list every operation it keeps: what finding
// orphaned throttles needs.
type Lister interface {
	List(ctx context.Context) ([]*Operation, error)
}

// RateAdvisor proposes the next throttle from broker metrics. ok is false
// when it has no opinion (metrics missing); reason says why, for the log.
type RateAdvisor interface {
	Advise(ctx context.Context, brokers []int32, current int64) (next int64, ok bool, reason string)
}

// Clock is time, passed in so tests and plans stay deterministic.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends, whichever is first.
	Sleep(ctx context.Context, d time.Duration) error
}

// Logger receives progress: group i/n, moves, bytes, throttle, ETA.
type Logger interface {
	Info(ctx context.Context, msg string, fields map[string]any)
	Warn(ctx context.Context, msg string, fields map[string]any)
}

// SystemClock is the real clock.
type SystemClock struct{}

func (SystemClock) Now() time.Time { return time.Now() }

func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type nopLogger struct{}

func (nopLogger) Info(context.Context, string, map[string]any) {}
func (nopLogger) Warn(context.Context, string, map[string]any) {}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
