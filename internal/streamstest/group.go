package streamstest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// GroupStatus is one look at a Streams app's group.
type GroupStatus struct {
	State   string
	Members int
	// Assigned maps each topic (classic) or subtopology (streams) to the
	// partitions the members own, sorted.
	Assigned map[string][]int32
	// Stable is true when the group is settled on the whole topology; Why
	// says what is missing when it is not.
	Stable bool
	Why    string
}

func (s GroupStatus) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state %s, %d members", s.State, s.Members)
	for _, k := range slices.Sorted(maps.Keys(s.Assigned)) {
		fmt.Fprintf(&b, ", %s=%v", k, s.Assigned[k])
	}
	if !s.Stable {
		b.WriteString("; not stable: " + s.Why)
	}
	return b.String()
}

// ClassicGroupStatus describes a classic-protocol Streams group with
// DescribeGroups. It is stable when its state is Stable and the members'
// assignments (the consumer protocol's, which hold active tasks only) cover
// partitions 0..want[topic]-1 of every topic in want exactly once. Pass
// the sources and the repartition topics, the fixed ones at their own
// count: changelogs are not consumed by active tasks.
func ClassicGroupStatus(ctx context.Context, adm *kadm.Client, group string, want map[string]int32) (GroupStatus, error) {
	var s GroupStatus
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return s, fmt.Errorf("DescribeGroups %s: %w", group, err)
	}
	g, ok := described[group]
	if !ok {
		return s, fmt.Errorf("DescribeGroups %s: the group is missing from the response", group)
	}
	if g.Err != nil {
		return s, fmt.Errorf("DescribeGroups %s: %w", group, g.Err)
	}
	s.State, s.Members = g.State, len(g.Members)
	owners := map[string]map[int32]int{}
	for _, m := range g.Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range c.Topics {
			if owners[t.Topic] == nil {
				owners[t.Topic] = map[int32]int{}
			}
			for _, p := range t.Partitions {
				owners[t.Topic][p]++
			}
		}
	}
	s.Assigned = sortedOwned(owners)
	s.Stable, s.Why = kafka.Covered(owners, want)
	if s.State != "Stable" {
		s.Stable, s.Why = false, "group state is "+s.State
	}
	return s, nil
}

// StreamsGroupStatus describes a streams-protocol (KIP-1071) group with
// StreamsGroupDescribe, sent to the group's coordinator
// (kafka.Client.DescribeStreamsGroup). It is stable when its state is
// Stable, every member's Assignment equals its TargetAssignment, and the
// members' active tasks cover partitions 0..n-1 of every subtopology
// exactly once, n being the most partitions
// want gives any topic the subtopology reads: the sources' count for most,
// the fixed count for the subtopology that reads only a fixed repartition
// topic. Every topic a subtopology reads must be in want.
func StreamsGroupStatus(ctx context.Context, cl *kafka.Client, group string, want map[string]int32) (GroupStatus, error) {
	var s GroupStatus
	g, err := cl.DescribeStreamsGroup(ctx, group)
	if err != nil {
		return s, err
	}
	s.State, s.Members = g.State, len(g.Members)
	owners := map[string]map[int32]int{}
	tasks := map[string]int32{}
	if g.Topology != nil {
		for _, st := range g.Topology.Subtopologies {
			tasks[st.ID] = 0
			for _, t := range st.Sources {
				tasks[st.ID] = max(tasks[st.ID], want[t])
			}
			for _, r := range st.RepartitionSources {
				tasks[st.ID] = max(tasks[st.ID], want[r.Topic])
			}
		}
	}
	var behind []string
	for _, m := range g.Members {
		for sub, parts := range m.Active {
			if owners[sub] == nil {
				owners[sub] = map[int32]int{}
			}
			for _, p := range parts {
				owners[sub][p]++
			}
		}
		if !m.AtTarget {
			behind = append(behind, m.ID)
		}
	}
	s.Assigned = sortedOwned(owners)
	switch {
	case s.State != "Stable":
		s.Why = "group state is " + s.State
	case len(tasks) == 0:
		s.Why = "the group has no initialized topology"
	case len(behind) > 0:
		s.Why = fmt.Sprintf("members %v have not reached their target assignment", behind)
	default:
		s.Stable, s.Why = kafka.Covered(owners, tasks)
	}
	return s, nil
}

func sortedOwned(owners map[string]map[int32]int) map[string][]int32 {
	out := map[string][]int32{}
	for k, ps := range owners {
		for p := range ps {
			out[k] = append(out[k], p)
		}
		slices.Sort(out[k])
	}
	return out
}

// WaitStable polls status until it reports Stable for quiet without a
// break, and returns the last status. On ctx's end it returns the last
// status and the error.
func WaitStable(ctx context.Context, quiet time.Duration, status func(context.Context) (GroupStatus, error)) (GroupStatus, error) {
	var last GroupStatus
	var lastErr error
	var since time.Time
	for {
		s, err := status(ctx)
		switch {
		case err != nil:
			lastErr, since = err, time.Time{}
		case s.Stable:
			last, lastErr = s, nil
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= quiet {
				return s, nil
			}
		default:
			last, lastErr, since = s, nil, time.Time{}
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return last, fmt.Errorf("group not stable (last error: %v): %w", lastErr, ctx.Err())
			}
			return last, fmt.Errorf("group not stable (%s): %w", last, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
