package engine

import (
	"fmt"
	"strings"
)

// InputError lists every problem found in the planner's input. It is returned
// before any planning starts; nothing in it depends on the plan.
type InputError struct {
	Problems []error
}

func (e *InputError) Error() string {
	var b strings.Builder
	if len(e.Problems) == 1 {
		b.WriteString("invalid planner input: ")
	} else {
		fmt.Fprintf(&b, "invalid planner input (%d problems): ", len(e.Problems))
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap gives the individual problems to errors.Is and errors.As.
func (e *InputError) Unwrap() []error { return e.Problems }

// PartitionError is a problem with one partition: "topic pN: reason".
type PartitionError struct {
	Topic     string
	Partition int32
	Err       error
}

func (e *PartitionError) Error() string {
	return fmt.Sprintf("%s p%d: %v", e.Topic, e.Partition, e.Err)
}

func (e *PartitionError) Unwrap() error { return e.Err }

// BrokerError is a problem with one broker: "broker N: reason".
type BrokerError struct {
	Broker int32
	Err    error
}

func (e *BrokerError) Error() string { return fmt.Sprintf("broker %d: %v", e.Broker, e.Err) }

func (e *BrokerError) Unwrap() error { return e.Err }

// Constraint names a hard limit the planner could not meet.
type Constraint string

// The hard constraints.
const (
	// ConstraintBrokerCount: fewer usable brokers than a replication factor.
	ConstraintBrokerCount Constraint = "broker count"
	// ConstraintDiskCapacity: the data does not fit under the brokers'
	// capacity less min_free_disk_percent, at the end or at some group.
	ConstraintDiskCapacity Constraint = "disk capacity"
	// ConstraintRackSpread: a partition cannot be spread over as many racks
	// as the racks allow.
	ConstraintRackSpread Constraint = "rack spread"
	// ConstraintOnlineReplica: a partition whose replicas are all on offline
	// brokers has no replica to copy its data from.
	ConstraintOnlineReplica Constraint = "online replica"
)

// InfeasibleError says which constraint failed, where, and by how much.
// Subject is "broker N", "topic T" or "topic pN"; Need and Limit are in Unit
// ("bytes", "brokers", "racks"), and Need-Limit is the shortfall.
type InfeasibleError struct {
	Constraint Constraint `json:"constraint"`
	Subject    string     `json:"subject"`
	Need       int64      `json:"need"`
	Limit      int64      `json:"limit"`
	Unit       string     `json:"unit"`
	Detail     string     `json:"detail,omitempty"`
}

// Over is how far the need exceeds the limit.
func (e *InfeasibleError) Over() int64 { return e.Need - e.Limit }

func (e *InfeasibleError) Error() string {
	s := fmt.Sprintf("infeasible (%s) on %s: needs %d %s, limit is %d %s, over by %d %s",
		e.Constraint, e.Subject, e.Need, e.Unit, e.Limit, e.Unit, e.Over(), e.Unit)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// NoShrinkRule is Kafka's rule in the words of every refusal to shrink a
// topic, from any resource, so that a user (or a script) meets one wording.
const NoShrinkRule = "Kafka can add partitions to a topic but never remove them"

// ShrinkError is a partition count below a topic's current one: Kafka can
// add partitions to a topic but never remove them.
type ShrinkError struct {
	Topic      string
	Partitions int // the topic has
	Target     int // was asked for
}

func (e *ShrinkError) Error() string {
	return fmt.Sprintf("topic %q has %d partitions and %d are asked for: %s", e.Topic, e.Partitions, e.Target, NoShrinkRule)
}

// CheckNoShrink is the one place of the rule that a topic never shrinks:
// a *ShrinkError when target is below the topic's partitions, else nil.
func CheckNoShrink(topic string, partitions, target int) error {
	if target < partitions {
		return &ShrinkError{Topic: topic, Partitions: partitions, Target: target}
	}
	return nil
}
