package executor

import (
	"fmt"
	"sort"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// throttledBrokers are every broker that sends or receives in the plan's
// copying moves.
func throttledBrokers(p *engine.Plan) []int32 {
	seen := map[int32]bool{}
	for _, m := range p.Moves() {
		if !copies(m) {
			continue
		}
		for _, b := range m.OldReplicas {
			seen[b] = true
		}
		for _, b := range m.NewReplicas {
			seen[b] = true
		}
	}
	return sortedKeys(seen)
}

func groupBrokers(g engine.Group) []int32 {
	seen := map[int32]bool{}
	for _, m := range g.Moves() {
		for _, b := range m.OldReplicas {
			seen[b] = true
		}
		for _, b := range m.NewReplicas {
			seen[b] = true
		}
	}
	return sortedKeys(seen)
}

// copies reports whether a move adds a replica. A move that only removes
// replicas (a lower replication factor) sends no data, so it gets no
// throttle: one would only slow an existing follower that fell out of the
// ISR, which the controller may be waiting for to finish the removal.
func copies(m engine.Move) bool {
	return len(without(m.NewReplicas, m.OldReplicas)) > 0
}

// throttleEntries follow Kafka's own reassignment tool for the moves that
// copy: the leader throttle covers the partition's current replicas (any
// may be the one sending), the follower throttle the replicas being added.
// In-sync replicas are never throttled by Kafka, so over-listing costs
// nothing.
func throttleEntries(ms []engine.Move) []ThrottledReplicas {
	byTopic := map[string]*ThrottledReplicas{}
	var topics []string
	for _, m := range ms {
		if !copies(m) {
			continue
		}
		t := byTopic[m.Topic]
		if t == nil {
			t = &ThrottledReplicas{Topic: m.Topic}
			byTopic[m.Topic] = t
			topics = append(topics, m.Topic)
		}
		for _, b := range m.OldReplicas {
			t.Leader = append(t.Leader, fmt.Sprintf("%d:%d", m.Partition, b))
		}
		for _, b := range m.NewReplicas {
			if !contains(m.OldReplicas, b) {
				t.Follower = append(t.Follower, fmt.Sprintf("%d:%d", m.Partition, b))
			}
		}
	}
	sort.Strings(topics)
	out := make([]ThrottledReplicas, len(topics))
	for i, t := range topics {
		out[i] = *byTopic[t]
	}
	return out
}

func mergeThrottles(have, added []ThrottledReplicas) []ThrottledReplicas {
	byTopic := map[string]int{}
	for i, t := range have {
		byTopic[t.Topic] = i
	}
	for _, a := range added {
		if i, ok := byTopic[a.Topic]; ok {
			have[i].Leader = append(have[i].Leader, a.Leader...)
			have[i].Follower = append(have[i].Follower, a.Follower...)
			continue
		}
		byTopic[a.Topic] = len(have)
		have = append(have, a)
	}
	return have
}
