package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// placedTopic is a topic this client created or grew, remembered until
// Metadata shows it, so that the next placement counts its replicas.
type placedTopic struct {
	partitions []engine.Partition
	at         time.Time
}

// placedMemory bounds how long a placement is remembered: brokers show a
// new topic within seconds, so a placement older than this that Metadata
// still does not show was undone by someone.
const placedMemory = 2 * time.Minute

// Placement is the cluster as the engine needs it to place new partitions
// (brokers with racks, every partition's replicas), held exclusively by one
// caller. Terraform creates ten topics at once; placed from one shared
// snapshot they would all pick the same least-loaded brokers. Under a
// Placement each creation sees the replicas of those before it, including
// ones the brokers do not show yet.
type Placement struct {
	// Cluster is the view to place from. Sizes and disks are not read.
	Cluster engine.Cluster

	c        *Client
	released bool
}

// BeginPlacement takes the client's placement lock and reads the cluster
// with one Metadata request. Call Release when done, on every path.
func (c *Client) BeginPlacement(ctx context.Context) (*Placement, error) {
	t := &c.topics
	t.placeMu.Lock()
	p := &Placement{c: c}
	var view engine.Cluster
	err := c.withTimeout(ctx, "reading the cluster to place partitions", func(ctx context.Context) error {
		md, err := metadataRequest(nil).RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		moving, err := c.reassignmentTargets(ctx)
		if err != nil {
			return err
		}
		for _, b := range md.Brokers {
			rack := ""
			if b.Rack != nil {
				rack = *b.Rack
			}
			view.Brokers = append(view.Brokers, engine.Broker{ID: b.NodeID, Rack: rack, Alive: true})
		}
		shown := map[string]int{}
		for _, mt := range md.Topics {
			d, ok, err := topicFromMetadata(mt, false)
			if err != nil {
				return err
			}
			if !ok || d.Name == LeaseTopic {
				// The lease log is created by the first operation, maybe
				// this one, between a placement previewed and the one
				// applied; its one tiny partition must not shift them.
				continue
			}
			shown[d.Name] = len(d.Partitions)
			if pt, mine := t.placed[d.Name]; mine && len(pt.partitions) > len(d.Partitions) {
				continue // the overlay below stands for it
			}
			for _, ps := range d.Partitions {
				replicas := ps.Replicas
				if target, ok := moving[partitionKey{d.Name, ps.Partition}]; ok {
					replicas = target
				}
				view.Partitions = append(view.Partitions, engine.Partition{Topic: d.Name, Partition: ps.Partition, Replicas: replicas})
			}
		}
		now := time.Now()
		for name, pt := range t.placed {
			if shown[name] >= len(pt.partitions) || now.Sub(pt.at) > placedMemory {
				delete(t.placed, name)
				continue
			}
			view.Partitions = append(view.Partitions, pt.partitions...)
		}
		// A replica on a broker Metadata does not list (stopped, fenced)
		// still counts for its partition; the engine never places on it.
		view.Brokers = withOfflineBrokers(view.Brokers, view.Partitions)
		return nil
	})
	if err != nil {
		t.placeMu.Unlock()
		return nil, err
	}
	p.Cluster = view
	return p, nil
}

type partitionKey struct {
	topic     string
	partition int32
}

// reassignmentTargets are the replicas each partition being reassigned
// heads for: Metadata lists its old and new replicas together, and a
// placement must count the new ones (they will hold the data) without the
// old ones (they will not), and read the topic's replication factor from
// what the partition will have, not from the union.
func (c *Client) reassignmentTargets(ctx context.Context) (map[partitionKey][]int32, error) {
	rs, err := c.ListReassignments(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the reassignments in progress: %w", err)
	}
	out := make(map[partitionKey][]int32, len(rs))
	for _, r := range rs {
		var target []int32
		for _, b := range r.Replicas {
			if !slices.Contains(r.Removing, b) {
				target = append(target, b)
			}
		}
		out[partitionKey{r.Topic, r.Partition}] = target
	}
	return out, nil
}

// View is the cluster to place from, as the executor's Placement port
// reads it.
func (p *Placement) View() engine.Cluster { return p.Cluster }

var (
	_ executor.Placer    = (*Port)(nil)
	_ executor.Placement = (*Placement)(nil)
)

// BeginPlacement is Client.BeginPlacement for the executor.
func (p *Port) BeginPlacement(ctx context.Context) (executor.Placement, error) {
	pl, err := p.c.BeginPlacement(ctx)
	if err != nil {
		return nil, err // not a nil *Placement in an interface
	}
	return pl, nil
}

// AwaitPartitionsReady waits until every broker shows topic with
// partitions partitions, each with a leader and a full ISR.
func (p *Port) AwaitPartitionsReady(ctx context.Context, topic string, partitions int) error {
	return p.c.AwaitTopicReady(ctx, topic, partitions, 0)
}

// Release gives up the placement lock; calling it again does nothing.
func (p *Placement) Release() {
	if p == nil || p.released {
		return
	}
	p.released = true
	p.c.topics.placeMu.Unlock()
}

// CreateTopic creates topic with the placed partitions, which must be
// numbered 0..n-1, and remembers them for the next placement.
func (p *Placement) CreateTopic(ctx context.Context, topic string, parts []engine.Partition, configs map[string]string) error {
	assignment := make(map[int32][]int32, len(parts))
	for _, ps := range parts {
		if ps.Topic != topic {
			return fmt.Errorf("placement of %s p%d handed to the creation of topic %s; this is a bug in kafkascale", ps.Topic, ps.Partition, topic)
		}
		assignment[ps.Partition] = ps.Replicas
	}
	if err := p.c.CreateTopic(ctx, topic, assignment, configs); err != nil {
		return withCordoned(err)
	}
	p.remember(topic, nil, parts)
	return nil
}

// CreatePartitions grows every topic of grow from its current partitions
// (as the view shows them) with its placed new ones, sent as an explicit
// assignment in ONE CreatePartitions request, which KRaft commits as one batch: a Streams
// app's sources and internal topics must never be seen half grown. Each
// topic can still fail alone (TopicErrors); the ones that did not are
// remembered for the next placement.
func (p *Placement) CreatePartitions(ctx context.Context, grow map[string][]engine.Partition) error {
	current := map[string][]engine.Partition{}
	for _, ps := range p.Cluster.Partitions {
		if _, ok := grow[ps.Topic]; ok {
			current[ps.Topic] = append(current[ps.Topic], ps)
		}
	}
	var reqs []NewPartitions
	for topic, newParts := range grow {
		sort.Slice(newParts, func(i, j int) bool { return newParts[i].Partition < newParts[j].Partition })
		have := len(current[topic])
		g := NewPartitions{Topic: topic, Count: have + len(newParts)}
		for i, ps := range newParts {
			if ps.Topic != topic || int(ps.Partition) != have+i {
				return fmt.Errorf("new partition %s p%d does not follow the %d partitions of topic %s; this is a bug in kafkascale", ps.Topic, ps.Partition, have, topic)
			}
			g.Assignment = append(g.Assignment, ps.Replicas)
		}
		reqs = append(reqs, g)
	}
	err := p.c.CreatePartitions(ctx, reqs...)
	var failed TopicErrors
	if err != nil && !errors.As(err, &failed) {
		return err
	}
	for topic, newParts := range grow {
		if !slices.ContainsFunc(failed, func(te *TopicError) bool { return te.Topic == topic }) {
			p.remember(topic, current[topic], newParts)
		}
	}
	return err
}

func (p *Placement) remember(topic string, current, added []engine.Partition) {
	all := append(append([]engine.Partition(nil), current...), added...)
	p.c.topics.placed[topic] = placedTopic{partitions: all, at: time.Now()}
}
