package executor

import (
	"context"
	"fmt"
	"slices"
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

// mergeThrottles adds to have the entries of added it lacks. An entry is
// recorded once however often it was added: a resumed run throttles the
// moves in flight again, and a broker that did not show an entry yet
// returns it as added a second time. A duplicate made every later removal
// wait for ever for "the rest" of it (CI, TestAccClusterResource_
// sigkillMidGroupTiered, and soak seed 3, step 25: "waited 2m0s for
// removed throttled replicas to go: topic ledger still lists []").
func mergeThrottles(have, added []ThrottledReplicas) []ThrottledReplicas {
	byTopic := map[string]int{}
	for i, t := range have {
		byTopic[t.Topic] = i
	}
	for _, a := range added {
		i, ok := byTopic[a.Topic]
		if !ok {
			i = len(have)
			byTopic[a.Topic] = i
			have = append(have, ThrottledReplicas{Topic: a.Topic})
		}
		have[i].Leader = appendMissing(have[i].Leader, a.Leader)
		have[i].Follower = appendMissing(have[i].Follower, a.Follower)
	}
	return have
}

// appendMissing appends the entries of add that list lacks, each once.
func appendMissing(list, add []string) []string {
	for _, e := range add {
		if !slices.Contains(list, e) {
			list = append(list, e)
		}
	}
	return list
}

// releaseThrottles removes the throttle entries of moves that finished
// while the rest of their group still copies. Kafka's follower throttles a
// listed replica whenever its last fetch left it behind the leader, in the
// ISR or not (PartitionFetchState.isReplicaInSync is "lag <= 0"), so a
// finished replica left listed on a broker whose quota the group's other
// copies use up can miss a write acknowledged by all in-sync replicas until
// the leader drops it from the ISR: replica.lag.time.max.ms (30 s by
// default) and more. A producer with acks=all waits that long, and so does
// the heartbeat of the operation lease when its own partition moved.
// Entries that a move in active (in flight, or starting: the next move of
// the same partition) also needs stay.
//
// The removal runs in the background, beside the submission of the next
// moves (never beside their throttling: see runMoves); the function
// returned waits for it, then records it. op is not touched
// until then: the record keeps listing the entries while they go, which
// only ever makes a later removal subtract what is already gone.
func (e *Executor) releaseThrottles(ctx context.Context, op *Operation, finished, active []engine.Move) func(context.Context) error {
	ours := subtractThrottles(commonThrottles(op.ThrottledReplicas, throttleEntries(finished)), throttleEntries(active))
	if len(ours) == 0 {
		return func(context.Context) error { return nil }
	}
	done := make(chan error, 1)
	go func() { done <- e.d.Kafka.UnthrottleReplicas(ctx, ours) }()
	return func(ctx context.Context) error {
		if err := <-done; err != nil {
			return fmt.Errorf("removing the replica throttles of %d finished move(s) of group %d/%d: %w", len(finished), op.Group+1, len(op.Plan.Groups), err)
		}
		op.ThrottledReplicas = subtractThrottles(op.ThrottledReplicas, ours)
		return e.save(ctx, op)
	}
}

// commonThrottles are the entries of want that have also holds: only
// entries this operation added are its to remove.
func commonThrottles(have, want []ThrottledReplicas) []ThrottledReplicas {
	var out []ThrottledReplicas
	for _, w := range want {
		for _, h := range have {
			if h.Topic != w.Topic {
				continue
			}
			// w's entries that h holds.
			c := ThrottledReplicas{Topic: w.Topic, Leader: without(w.Leader, without(w.Leader, h.Leader)), Follower: without(w.Follower, without(w.Follower, h.Follower))}
			if len(c.Leader)+len(c.Follower) > 0 {
				out = append(out, c)
			}
		}
	}
	return out
}

// subtractThrottles is have without the entries of gone; topics left with
// no entry are dropped.
func subtractThrottles(have, gone []ThrottledReplicas) []ThrottledReplicas {
	var out []ThrottledReplicas
	for _, h := range have {
		for _, g := range gone {
			if g.Topic == h.Topic {
				h.Leader, h.Follower = without(h.Leader, g.Leader), without(h.Follower, g.Follower)
			}
		}
		if len(h.Leader)+len(h.Follower) > 0 {
			out = append(out, h)
		}
	}
	return out
}
