package engine

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Broker is one broker as the planner sees it.
//
// CapacityBytes is the usable size of the broker's log directories; zero means
// unknown, and disk checks are then skipped for that broker (the plan says so
// in its warnings). UsedBytes is what is already on disk; the part of it not
// explained by the broker's replicas (other topics' leftovers, logs) is kept
// as a constant when projecting disk use. Alive is false for a broker that is
// fenced or offline: it never receives a replica.
type Broker struct {
	ID            int32  `json:"id"`
	Rack          string `json:"rack,omitempty"`
	CapacityBytes int64  `json:"capacity_bytes,omitempty"`
	UsedBytes     int64  `json:"used_bytes,omitempty"`
	Alive         bool   `json:"alive"`
}

// Partition is one partition with its ordered replica list, shaped like an
// entry of Kafka's reassignment JSON. Replicas[0] is the preferred leader.
type Partition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	SizeBytes int64   `json:"size_bytes"`
	// CopyBytes is what a new replica copies, when that is less than
	// SizeBytes: a replica of a topic with tiered storage (KIP-405)
	// copies its leader's local log only, and with KIP-1023 only the part
	// not in remote storage yet. Zero means SizeBytes. Moves, the ETA and
	// the disk a new replica takes while the plan runs count CopyBytes;
	// the balance, and what a removed replica frees, count SizeBytes, what
	// a replica holds once it keeps up.
	CopyBytes int64 `json:"copy_bytes,omitempty"`
	// RemoteBytes is what of the partition is in remote storage and not
	// copied by a new replica: a plan reports it (Plan.RemoteBytes).
	RemoteBytes int64 `json:"remote_bytes,omitempty"`
	// PendingUploadUnknown is set for a partition of a tiered topic whose
	// leader has segments in remote storage but no earliest pending upload
	// offset to give a new follower (KIP-1023): on Kafka 4.4 a new replica
	// of it does not start until a record is written to the partition.
	PendingUploadUnknown bool `json:"pending_upload_unknown,omitempty"`
}

// Cluster is the current state: every broker and every partition.
type Cluster struct {
	Brokers    []Broker    `json:"brokers"`
	Partitions []Partition `json:"partitions"`
}

// Change is what the plan should achieve. AddBrokers are brokers that will
// exist (and hold nothing yet); RemoveBrokers are ids of brokers to drain.
// ReplicationFactor sets a new replication factor per topic. The zero Change
// rebalances the cluster in place.
type Change struct {
	AddBrokers        []Broker       `json:"add_brokers,omitempty"`
	RemoveBrokers     []int32        `json:"remove_brokers,omitempty"`
	ReplicationFactor map[string]int `json:"replication_factor,omitempty"`
}

// Awareness says how a broker's rack string is read as failure domains.
//
// With Separator "/" and Dimensions ["zone", "rack"], the rack "eu-1a/r3"
// is in zone "eu-1a" and rack "eu-1a/r3": a later dimension's value is
// qualified by the earlier ones, so rack r3 of two zones is two racks. A rack
// string with fewer parts than dimensions repeats its last value. Dimensions
// are in priority order: replicas are spread over zones first. With no
// dimensions, the whole rack string is the one dimension.
type Awareness struct {
	Separator  string   `json:"separator,omitempty"`
	Dimensions []string `json:"dimensions,omitempty"`
}

// Options are the planner's limits. Zero counts, a zero MaxDiskSkewPercent
// and a zero throttle mean the defaults; a zero MinFreeDiskPercent means no
// disk is kept free (use DefaultOptions for the recommended reserve).
type Options struct {
	Awareness Awareness `json:"awareness"`
	// MaxMovesPerStep caps the moves in one AlterPartitionAssignments request.
	MaxMovesPerStep int `json:"max_moves_per_step"`
	// MaxMovesPerBroker caps the moves that touch one broker at once, adding
	// and removing replicas both counted.
	MaxMovesPerBroker int `json:"max_moves_per_broker"`
	// MaxReplicaMovesPerPartition caps the replicas of one partition in
	// flight at once; with 1, an RF 3 partition never briefly becomes RF 6.
	MaxReplicaMovesPerPartition int `json:"max_replica_moves_per_partition"`
	// MinFreeDiskPercent of every broker's capacity stays free at every step,
	// counting both copies of every move in flight.
	MinFreeDiskPercent float64 `json:"min_free_disk_percent"`
	// MaxDiskSkewPercent is how far a broker's bytes may stray from its share.
	MaxDiskSkewPercent float64 `json:"max_disk_skew_percent"`
	// EvenBytesToPercent is how close to its share a rebalance in place
	// brings each broker's bytes, once one is further than
	// MaxDiskSkewPercent; zero means MaxDiskSkewPercent. KeptBalanced sets
	// it for a cluster kept balanced.
	EvenBytesToPercent float64 `json:"even_bytes_to_percent,omitempty"`
	// ThrottleBytesPerSec is the replication throttle per broker, used for
	// the estimated duration.
	ThrottleBytesPerSec int64 `json:"throttle_bytes_per_sec"`
	// DemotedBrokers lead no partition that another receiving replica can
	// lead (Cruise Control's demote_broker, kafka-kit's leader
	// evacuation): a broker about to be patched, or with a slow disk,
	// keeps its replicas but serves no producer. Every plan keeps them so
	// while they are named; ids not in the cluster are ignored.
	DemotedBrokers []int32 `json:"demoted_brokers,omitempty"`
}

// Default option values.
const (
	DefaultMaxMovesPerStep             = 10
	DefaultMaxMovesPerBroker           = 2
	DefaultMaxReplicaMovesPerPartition = 1
	DefaultMinFreeDiskPercent          = 20
	DefaultMaxDiskSkewPercent          = 10
	DefaultThrottleBytesPerSec         = 20 << 20
)

// DefaultOptions returns the recommended limits.
func DefaultOptions() Options {
	return Options{
		MaxMovesPerStep:             DefaultMaxMovesPerStep,
		MaxMovesPerBroker:           DefaultMaxMovesPerBroker,
		MaxReplicaMovesPerPartition: DefaultMaxReplicaMovesPerPartition,
		MinFreeDiskPercent:          DefaultMinFreeDiskPercent,
		MaxDiskSkewPercent:          DefaultMaxDiskSkewPercent,
		ThrottleBytesPerSec:         DefaultThrottleBytesPerSec,
	}
}

// KeptBalanced returns o for a rebalance of a cluster kept balanced, one
// whose every plan asks for a rebalance once it is out of balance
// (OutOfBalance): bytes are evened to half of MaxDiskSkewPercent. A
// rebalance that stopped just under the limit would be asked for again by
// the next few minutes of writes, and the plan right after a successful
// apply would show moves again (found by make soak, with acks=all
// producers writing throughout). Half the limit leaves the other half for
// the writes: the hysteresis Cruise Control keeps with its balance margin.
func KeptBalanced(o Options) Options {
	o.EvenBytesToPercent = o.WithDefaults().MaxDiskSkewPercent / 2
	return o
}

// WithDefaults returns o with every zero field that has a default filled in.
func (o Options) WithDefaults() Options {
	if o.MaxMovesPerStep == 0 {
		o.MaxMovesPerStep = DefaultMaxMovesPerStep
	}
	if o.MaxMovesPerBroker == 0 {
		o.MaxMovesPerBroker = DefaultMaxMovesPerBroker
	}
	if o.MaxReplicaMovesPerPartition == 0 {
		o.MaxReplicaMovesPerPartition = DefaultMaxReplicaMovesPerPartition
	}
	if o.MaxDiskSkewPercent == 0 {
		o.MaxDiskSkewPercent = DefaultMaxDiskSkewPercent
	}
	if o.ThrottleBytesPerSec == 0 {
		o.ThrottleBytesPerSec = DefaultThrottleBytesPerSec
	}
	return o
}

// OptionError is one option outside its limits.
type OptionError struct {
	Option string // the option's name as the user writes it
	Value  string
	Limit  string // the allowed range, in words
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("option %s is %s; it must be %s", e.Option, e.Value, e.Limit)
}

// Validate checks every option after defaults are applied and returns all
// problems joined, each an *OptionError naming the option and its limit.
func (o Options) Validate() error {
	var errs []error
	bad := func(name, value, limit string) {
		errs = append(errs, &OptionError{Option: name, Value: value, Limit: limit})
	}
	atLeast1 := func(name string, v int) {
		if v < 1 {
			bad(name, fmt.Sprint(v), "at least 1")
		}
	}
	atLeast1("max_moves_per_step", o.MaxMovesPerStep)
	atLeast1("max_moves_per_broker", o.MaxMovesPerBroker)
	atLeast1("max_replica_moves_per_partition", o.MaxReplicaMovesPerPartition)
	if p := o.MinFreeDiskPercent; math.IsNaN(p) || p < 0 || p >= 100 {
		bad("min_free_disk_percent", fmt.Sprint(p), "at least 0 and below 100")
	}
	if p := o.MaxDiskSkewPercent; math.IsNaN(p) || p <= 0 || math.IsInf(p, 0) {
		bad("max_disk_skew_percent", fmt.Sprint(p), "above 0")
	}
	if o.ThrottleBytesPerSec < 1 {
		bad("throttle_bytes_per_sec", fmt.Sprint(o.ThrottleBytesPerSec), "at least 1 byte per second")
	}
	dims := o.Awareness.Dimensions
	if len(dims) > 1 && o.Awareness.Separator == "" {
		bad("awareness.separator", `""`, "set when more than one dimension is given")
	}
	seen := map[string]bool{}
	for i, d := range dims {
		if strings.TrimSpace(d) == "" {
			bad(fmt.Sprintf("awareness.dimensions[%d]", i), `""`, "a non-empty name")
			continue
		}
		if seen[d] {
			bad(fmt.Sprintf("awareness.dimensions[%d]", i), fmt.Sprintf("%q", d), "unique")
		}
		seen[d] = true
	}
	return errors.Join(errs...)
}

// diskLimit is the most bytes a broker may hold: capacity less the reserve.
func diskLimit(capacity int64, minFreePercent float64) int64 {
	keep := math.Ceil(float64(capacity) * (minFreePercent / 100))
	return capacity - int64(keep)
}
