package engine

import (
	"fmt"
	"strconv"
)

// Rules a topic's settings must follow before Kafka is asked, one function
// and one error type each. Kafka accepts neither mistake itself: a
// replication factor above the live brokers fails only when the topic is
// placed, and a min.insync.replicas above the replication factor only when
// producers write.

// BrokerCountError is a replication factor above the brokers that can hold
// a replica: each replica of a partition needs a broker of its own.
type BrokerCountError struct {
	Topic             string
	ReplicationFactor int
	// Live are the unfenced brokers, sorted by id.
	Live []int32
}

func (e *BrokerCountError) Error() string {
	return fmt.Sprintf("topic %s: replication factor %d needs %d brokers, but %d are live (%s)",
		e.Topic, e.ReplicationFactor, e.ReplicationFactor, len(e.Live), idList(e.Live))
}

// CheckBrokerCount is the rule that a topic's replication factor is at most
// the live broker count: a *BrokerCountError when rf is above len(live),
// else nil.
func CheckBrokerCount(topic string, rf int, live []int32) error {
	if rf > len(live) {
		return &BrokerCountError{Topic: topic, ReplicationFactor: rf, Live: live}
	}
	return nil
}

// ConfigMinInsyncReplicas is the topic config CheckMinInsync reads.
const ConfigMinInsyncReplicas = "min.insync.replicas"

// MinInsyncError is a min.insync.replicas above the replication factor: a
// partition never has more in-sync replicas than replicas, so every write
// with acks=all would fail.
type MinInsyncError struct {
	Topic             string
	MinInsync         int
	ReplicationFactor int
}

func (e *MinInsyncError) Error() string {
	return fmt.Sprintf("topic %s: min.insync.replicas %d is above the replication factor %d", e.Topic, e.MinInsync, e.ReplicationFactor)
}

// CheckMinInsync is the rule that a topic's min.insync.replicas, when its
// configs set one, is at most its replication factor: a *MinInsyncError
// when it is above, else nil. A value that is no number is left to Kafka's
// own validation, which names it better.
func CheckMinInsync(topic string, configs map[string]string, rf int) error {
	v, ok := configs[ConfigMinInsyncReplicas]
	if !ok {
		return nil
	}
	if n, err := strconv.Atoi(v); err == nil && n > rf {
		return &MinInsyncError{Topic: topic, MinInsync: n, ReplicationFactor: rf}
	}
	return nil
}
