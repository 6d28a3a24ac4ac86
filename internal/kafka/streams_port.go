package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// StreamsPort implements executor.StreamsKafka for one app.
type StreamsPort struct {
	Client   *Client
	Protocol streams.Protocol
}

var _ executor.StreamsKafka = StreamsPort{}

// StreamsGroup describes the app's group with the request its protocol
// answers: DescribeGroups for a classic group, StreamsGroupDescribe for a
// streams group.
func (p StreamsPort) StreamsGroup(ctx context.Context, app string, want map[string]int32) (executor.StreamsGroupStatus, error) {
	var st executor.StreamsGroupStatus
	err := p.Client.withTimeout(ctx, "describing group "+app, func(ctx context.Context) error {
		var err error
		if p.Protocol == streams.ProtocolStreams {
			st, err = p.streamsStatus(ctx, app, want)
		} else {
			st, err = p.classicStatus(ctx, app, want)
		}
		return err
	})
	return st, err
}

func (p StreamsPort) classicStatus(ctx context.Context, app string, want map[string]int32) (executor.StreamsGroupStatus, error) {
	var st executor.StreamsGroupStatus
	described, err := p.Client.admin.DescribeGroups(ctx, app)
	if err != nil {
		return st, err
	}
	g, ok := described[app]
	if !ok {
		return st, fmt.Errorf("group %s is missing from the DescribeGroups answer", app)
	}
	if g.Err != nil {
		return st, g.Err
	}
	st.State, st.Members = g.State, len(g.Members)
	owners := map[string]map[int32]int{}
	for _, m := range g.Members {
		a, ok := m.Assigned.AsConsumer()
		if !ok {
			continue
		}
		for _, t := range a.Topics {
			if owners[t.Topic] == nil {
				owners[t.Topic] = map[int32]int{}
			}
			for _, part := range t.Partitions {
				owners[t.Topic][part]++
			}
		}
	}
	switch {
	case st.State != "Stable":
		st.Why = "group state is " + st.State
	case st.Members == 0:
		st.Why = "the group has no members"
	default:
		st.Stable, st.Why = Covered(owners, want)
	}
	return st, nil
}

func (p StreamsPort) streamsStatus(ctx context.Context, app string, want map[string]int32) (executor.StreamsGroupStatus, error) {
	var st executor.StreamsGroupStatus
	g, err := p.Client.describeStreamsGroup(ctx, app)
	if errors.Is(err, ErrGroupNotFound) {
		st.State, st.Why = "Dead", "the group does not exist"
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.State, st.Members = g.State, len(g.Members)
	subs, _ := streamsTopology(g, nil)
	// A subtopology has as many tasks as its widest source. want gives a
	// fixed subtopology's sources at their own count; for a source want
	// leaves out, the count the coordinator requires stands in.
	tasks := map[string]int32{}
	for _, s := range subs {
		for _, t := range s.Sources {
			n, ok := want[t]
			if !ok {
				n = s.SourcePartitions[t]
			}
			tasks[s.ID] = max(tasks[s.ID], n)
		}
	}
	owners := map[string]map[int32]int{}
	var behind []string
	for _, m := range g.Members {
		for sub, parts := range m.Active {
			if owners[sub] == nil {
				owners[sub] = map[int32]int{}
			}
			for _, part := range parts {
				owners[sub][part]++
			}
		}
		if !m.AtTarget {
			behind = append(behind, m.ID)
		}
	}
	switch {
	case st.State != "Stable":
		st.Why = "group state is " + st.State
	case len(subs) == 0:
		st.Why = "the group has no initialized topology"
	case len(behind) > 0:
		sort.Strings(behind)
		st.Why = fmt.Sprintf("members %s have not reached their target assignment", strings.Join(behind, ", "))
	default:
		expect := map[string]int32{}
		for id, n := range tasks {
			expect["subtopology "+id] = n
			owners["subtopology "+id] = owners[id]
			delete(owners, id)
		}
		st.Stable, st.Why = Covered(owners, expect)
	}
	return st, nil
}
