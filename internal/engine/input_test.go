package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

func TestBadInputIsRejected(t *testing.T) {
	ok := brokersWithRacks(1, rackList(3, ""), 0)
	part := func(topic string, p int32, size int64, reps ...int32) engine.Partition {
		return engine.Partition{Topic: topic, Partition: p, Replicas: reps, SizeBytes: size}
	}
	cases := []struct {
		name string
		c    engine.Cluster
		ch   engine.Change
		want []string
	}{
		{"empty cluster", engine.Cluster{}, engine.Change{}, []string{"the cluster has no brokers"}},
		{"duplicate broker ids", engine.Cluster{Brokers: append(ok, engine.Broker{ID: 2, Alive: true})}, engine.Change{},
			[]string{"broker 2: is listed twice"}},
		{"added broker already there", engine.Cluster{Brokers: ok}, engine.Change{AddBrokers: []engine.Broker{{ID: 3, Alive: true}}},
			[]string{"broker 3: is added but already in the cluster"}},
		{"replica on unknown broker", engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("t", 0, 1, 1, 9)}}, engine.Change{},
			[]string{"t p0: replica on unknown broker 9"}},
		{"negative size", engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("t", 0, -5, 1)}}, engine.Change{},
			[]string{"t p0: size -5 bytes is negative"}},
		{"negative capacity", engine.Cluster{Brokers: []engine.Broker{{ID: 1, CapacityBytes: -1, UsedBytes: -2, Alive: true}}}, engine.Change{},
			[]string{"broker 1: capacity -1 bytes is negative", "broker 1: used bytes -2 is negative"}},
		{"RF greater than brokers", engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("t", 0, 1, 1, 2)}},
			engine.Change{ReplicationFactor: map[string]int{"t": 4}}, []string{`topic "t": replication factor 4 is more than the 3 brokers`}},
		{"RF below one", engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("t", 0, 1, 1, 2)}},
			engine.Change{ReplicationFactor: map[string]int{"t": 0}}, []string{`topic "t": replication factor 0 is below 1`}},
		{"RF of unknown topic", engine.Cluster{Brokers: ok}, engine.Change{ReplicationFactor: map[string]int{"x": 1}},
			[]string{`topic "x": replication factor change for a topic with no partitions`}},
		{"duplicate replica", engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("t", 0, 1, 1, 1)}}, engine.Change{},
			[]string{"t p0: broker 1 is listed twice in its replicas"}},
		{"no replicas", engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("t", 0, 1)}}, engine.Change{},
			[]string{"t p0: has no replicas"}},
		{"duplicate partition", engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("t", 0, 1, 1), part("t", 0, 1, 2)}}, engine.Change{},
			[]string{"t p0: is listed twice"}},
		{"remove unknown broker", engine.Cluster{Brokers: ok}, engine.Change{RemoveBrokers: []int32{7}},
			[]string{"broker 7: is to be removed but is not in the cluster"}},
		{"negative ids", engine.Cluster{Brokers: []engine.Broker{{ID: -1, Alive: true}}, Partitions: []engine.Partition{part("", -1, 1, -1)}}, engine.Change{},
			[]string{"broker -1: broker id is negative", " p-1: topic name is empty", " p-1: partition index is negative", "replica on unknown broker -1"}},
		// Several problems come back together, each named.
		{"many at once", engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("a", 0, -1, 1), part("b", 1, 1, 8)}}, engine.Change{},
			[]string{"2 problems", "a p0: size -1 bytes is negative", "b p1: replica on unknown broker 8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := engine.PlanReassignment(tc.c, tc.ch, engine.DefaultOptions())
			var in *engine.InputError
			if !errors.As(err, &in) || p != nil {
				t.Fatalf("want *InputError and no plan, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}

	// Per-partition problems are typed: errors.As finds the partition.
	_, err := engine.PlanReassignment(engine.Cluster{Brokers: ok, Partitions: []engine.Partition{part("orders", 7, -1, 1)}}, engine.Change{}, engine.DefaultOptions())
	var pe *engine.PartitionError
	if !errors.As(err, &pe) || pe.Topic != "orders" || pe.Partition != 7 {
		t.Fatalf("want a PartitionError for orders p7, got %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := engine.DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if err := (engine.Options{}).WithDefaults().Validate(); err != nil {
		t.Fatalf("zero options with defaults invalid: %v", err)
	}
	bad := engine.Options{
		MaxMovesPerStep: -1, MaxMovesPerBroker: -2, MaxReplicaMovesPerPartition: -3,
		MinFreeDiskPercent: 100, MaxDiskSkewPercent: -1, ThrottleBytesPerSec: -5,
		Awareness: engine.Awareness{Dimensions: []string{"zone", "zone", ""}},
	}
	err := bad.Validate()
	for _, w := range []string{
		"option max_moves_per_step is -1; it must be at least 1",
		"option max_moves_per_broker is -2",
		"option max_replica_moves_per_partition is -3",
		"option min_free_disk_percent is 100; it must be at least 0 and below 100",
		"option max_disk_skew_percent is -1; it must be above 0",
		"option throttle_bytes_per_sec is -5",
		"option awareness.separator",
		`option awareness.dimensions[1] is "zone"; it must be unique`,
		"option awareness.dimensions[2]",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("Validate: %v; want %q", err, w)
		}
	}
	var oe *engine.OptionError
	if !errors.As(err, &oe) {
		t.Fatalf("want *OptionError in %v", err)
	}
	// The planner refuses bad options before looking at the cluster.
	_, err = engine.PlanReassignment(engine.Cluster{}, engine.Change{}, bad)
	var in *engine.InputError
	if !errors.As(err, &in) || !errors.As(err, &oe) {
		t.Fatalf("PlanReassignment with bad options: %v", err)
	}
}
