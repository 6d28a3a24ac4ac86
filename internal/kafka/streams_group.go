package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsGroup is a streams-protocol (KIP-1071) group as
// StreamsGroupDescribe reports it, in this package's own types.
type StreamsGroup struct {
	State   string
	Members []StreamsMember
	// Topology is nil until the coordinator has initialized one.
	Topology *StreamsTopology
}

// StreamsMember is one member of a streams group.
type StreamsMember struct {
	ID string
	// Active maps each subtopology to the partitions of the member's
	// active tasks.
	Active map[string][]int32
	// AtTarget is true when the member holds its target assignment: the
	// same active, standby and warm-up tasks.
	AtTarget bool
}

// StreamsTopology is a streams group's topology as its coordinator
// resolved it against the cluster.
type StreamsTopology struct {
	Epoch         int32
	Subtopologies []StreamsGroupSubtopology
}

// StreamsGroupSubtopology is one subtopology of a streams group.
type StreamsGroupSubtopology struct {
	ID string
	// Sources are the user topics it reads.
	Sources []string
	// RepartitionSources are the repartition topics it reads, each with
	// the count the coordinator requires (not what the app declared).
	RepartitionSources []TopicCount
	RepartitionSinks   []string
	Changelogs         []TopicCount
}

// TopicCount is a topic and a partition count.
type TopicCount struct {
	Topic      string
	Partitions int32
}

// ErrGroupNotFound is a streams group the coordinator does not know.
var ErrGroupNotFound = errors.New("group not found")

// DescribeStreamsGroup describes a streams group with StreamsGroupDescribe,
// sent to the group's coordinator. A group the coordinator does not know is
// ErrGroupNotFound.
func (c *Client) DescribeStreamsGroup(ctx context.Context, group string) (StreamsGroup, error) {
	var g StreamsGroup
	err := c.withTimeout(ctx, "describing streams group "+group, func(ctx context.Context) error {
		return retryMovedCoordinator(ctx, func() error {
			var err error
			g, err = c.describeStreamsGroup(ctx, group)
			return err
		})
	})
	return g, err
}

// retryMovedCoordinator runs send again while its error says that the
// group's coordinator moved between FindCoordinator and the request (a
// leader election of __consumer_offsets, as a demotion or a broker's
// death makes) or is still loading the group, as kgo does for the group
// requests it routes itself.
func retryMovedCoordinator(ctx context.Context, send func() error) error {
	for attempt := 1; ; attempt++ {
		err := send()
		if !coordinatorMoved(err) || attempt == coordinatorAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(coordinatorBackoff):
		}
	}
}

// coordinatorAttempts and coordinatorBackoff bound the retries of a group
// request whose coordinator moved: ten tries 250 ms apart outlast a
// leader election of __consumer_offsets and the loading of the group.
const (
	coordinatorAttempts = 10
	coordinatorBackoff  = 250 * time.Millisecond
)

// coordinatorMoved reports the errors that mean "ask the coordinator
// again": it moved, is not elected yet, or is still loading the group.
func coordinatorMoved(err error) bool {
	return errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.CoordinatorLoadInProgress)
}

// describeStreamsGroup sends StreamsGroupDescribe to the group's
// coordinator: kgo does not route this request by itself.
func (c *Client) describeStreamsGroup(ctx context.Context, group string) (StreamsGroup, error) {
	coord := kadm.NewClient(c.kgo).FindGroupCoordinators(ctx, group)
	fc, ok := coord[group]
	if !ok {
		return StreamsGroup{}, fmt.Errorf("finding the coordinator of group %s: no answer", group)
	}
	if fc.Err != nil {
		return StreamsGroup{}, fmt.Errorf("finding the coordinator of group %s: %w", group, fc.Err)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, c.kgo.Broker(int(fc.NodeID)))
	if err != nil {
		return StreamsGroup{}, fmt.Errorf("StreamsGroupDescribe %s on broker %d: %w", group, fc.NodeID, err)
	}
	if len(resp.Groups) != 1 {
		return StreamsGroup{}, fmt.Errorf("StreamsGroupDescribe %s on broker %d: %d groups in the answer, want 1", group, fc.NodeID, len(resp.Groups))
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return StreamsGroup{}, fmt.Errorf("StreamsGroupDescribe %s: %w", group, ErrGroupNotFound)
		}
		msg := ""
		if g.ErrorMessage != nil {
			msg = ": " + *g.ErrorMessage
		}
		return StreamsGroup{}, fmt.Errorf("StreamsGroupDescribe %s on broker %d: %w%s", group, fc.NodeID, err, msg)
	}
	return streamsGroupFrom(g), nil
}

// streamsGroupFrom converts the protocol's answer into this package's view.
func streamsGroupFrom(g kmsg.StreamsGroupDescribeResponseGroup) StreamsGroup {
	out := StreamsGroup{State: g.State}
	for _, m := range g.Members {
		sm := StreamsMember{ID: m.MemberID, Active: map[string][]int32{}, AtTarget: sameStreamsAssignment(m.Assignment, m.TargetAssignment)}
		for _, t := range m.Assignment.ActiveTasks {
			sm.Active[t.SubtopologyID] = append(sm.Active[t.SubtopologyID], t.Partitions...)
		}
		out.Members = append(out.Members, sm)
	}
	if g.Topology == nil {
		return out
	}
	out.Topology = &StreamsTopology{Epoch: g.Topology.Epoch}
	for _, st := range g.Topology.Subtopologies {
		s := StreamsGroupSubtopology{ID: st.SubtopologyID, Sources: slices.Clone(st.SourceTopics), RepartitionSinks: slices.Clone(st.RepartitionSinkTopics)}
		for _, r := range st.RepartitionSourceTopics {
			s.RepartitionSources = append(s.RepartitionSources, TopicCount{Topic: r.Topic, Partitions: r.NumPartitions})
		}
		for _, cl := range st.StateChangelogTopics {
			s.Changelogs = append(s.Changelogs, TopicCount{Topic: cl.Topic, Partitions: cl.NumPartitions})
		}
		out.Topology.Subtopologies = append(out.Topology.Subtopologies, s)
	}
	return out
}

// sameStreamsAssignment reports whether a member holds its target
// assignment: the same active, standby and warm-up tasks.
func sameStreamsAssignment(a, b kmsg.StreamsAssignment) bool {
	return slices.Equal(flatTasks(a.ActiveTasks), flatTasks(b.ActiveTasks)) &&
		slices.Equal(flatTasks(a.StandbyTasks), flatTasks(b.StandbyTasks)) &&
		slices.Equal(flatTasks(a.WarmupTasks), flatTasks(b.WarmupTasks))
}

func flatTasks(tasks []kmsg.TaskIDs) []string {
	var out []string
	for _, t := range tasks {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s_%d", t.SubtopologyID, p))
		}
	}
	slices.Sort(out)
	return out
}
