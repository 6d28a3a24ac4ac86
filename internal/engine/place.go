package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// PlacePartitions places the partitions that grow topic to newCount
// partitions, as CreatePartitions' explicit assignment would take them. A
// topic that does not exist yet gets all newCount partitions. rf is the
// replication factor; zero means the topic's own, and an existing topic's
// new partitions must use its own. o.Awareness reads the racks and
// o.DemotedBrokers names the brokers that must not lead a new partition
// another replica can lead; the rest of o is not used.
//
// Each replica goes, in KIP-708's order, to a broker whose zone (then rack)
// the partition does not use yet, and among those to the least loaded: the
// fewest replicas of this topic first, so that the topic's partitions spread
// over the brokers, then the fewest replicas in the cluster, then the lowest
// id. The first replica goes before that to the broker that leads the
// fewest partitions of the topic; another order (the same over the brokers
// not demoted, or replica balance alone) is taken instead only where it
// does at least as well on every count (placement.better). Then the
// preferred leader of each new partition is chosen among its replicas
// (newLeaders): demoted brokers lead only what no other replica can, the
// topic's leaders are as even as the replicas allow (within 1 whenever the
// first order alone achieves that), and the cluster's preferred leaders
// fall within each broker's balanced range as often as possible. Only
// alive brokers receive replicas. The result is deterministic and sorted
// by partition; sizes are zero.
func PlacePartitions(c Cluster, topic string, newCount int, rf int, o Options) ([]Partition, error) {
	return PlacePartitionsAround(c, nil, topic, newCount, rf, o)
}

// PlacePartitionsAround is PlacePartitions with leaving brokers: brokers
// that an unfinished operation drains. They receive no replica, exactly as
// a drain's own plan gives them none, so that a partition created while
// they drain never has to be moved off them before they can be removed.
// Their existing replicas still count towards the load of the others.
// Leaving brokers that c does not list are ignored: a drained broker may
// already be gone while its operation finishes.
func PlacePartitionsAround(c Cluster, leaving []int32, topic string, newCount int, rf int, o Options) ([]Partition, error) {
	var drained []int32
	for _, id := range leaving {
		if slices.ContainsFunc(c.Brokers, func(b Broker) bool { return b.ID == id }) && !slices.Contains(drained, id) {
			drained = append(drained, id)
		}
	}
	m, err := buildModel(c, Change{RemoveBrokers: drained}, o)
	if err != nil {
		return nil, err
	}
	var problems []error
	existing, ownRF := 0, 0
	for i, p := range m.ps {
		if m.topic(i) == topic {
			existing++
			ownRF = int(p.n)
		}
	}
	switch {
	case topic == "":
		problems = append(problems, errors.New("topic name is empty"))
	case newCount < existing:
		problems = append(problems, CheckNoShrink(topic, existing, newCount))
	case newCount == existing:
		problems = append(problems, fmt.Errorf("topic %q: new partition count %d must be more than its %d partitions", topic, newCount, existing))
	}
	if rf == 0 {
		rf = ownRF
	}
	switch {
	case rf < 1:
		problems = append(problems, fmt.Errorf("topic %q: replication factor %d is below 1", topic, rf))
	case existing > 0 && rf != ownRF:
		problems = append(problems, fmt.Errorf("topic %q: replication factor %d differs from the topic's %d", topic, rf, ownRF))
	case rf > len(m.bs):
		problems = append(problems, fmt.Errorf("topic %q: replication factor %d is more than the %d brokers", topic, rf, len(m.bs)))
	}
	if len(problems) > 0 {
		return nil, &InputError{Problems: problems}
	}
	recv := 0
	for _, b := range m.bs {
		if b.receiving {
			recv++
		}
	}
	if rf > recv {
		return nil, &InfeasibleError{Constraint: ConstraintBrokerCount, Subject: fmt.Sprintf("topic %s", topic),
			Need: int64(rf), Limit: int64(recv), Unit: "brokers",
			Detail: placeDetail(rf, len(drained))}
	}

	n := newCount - existing
	best := placeReplicas(m, topic, n, rf, orderLeaders)
	if placeLeadersByCluster {
		best.pos = newLeaders(m, topic, best.sets, best.replicas)
		// Other orders, where they do at least as well on every count:
		// the same with the leaders among the brokers not demoted, and
		// replica balance alone.
		orders := []placeOrder{orderReplicas}
		if len(o.DemotedBrokers) > 0 {
			orders = []placeOrder{orderLeadersNotDemoted, orderReplicas}
		}
		rng, ok := placedReplicaRanges(m, n, rf, best.replicas)
		for _, order := range orders {
			other := placeReplicas(m, topic, n, rf, order)
			if !ok || slices.EqualFunc(other.sets, best.sets, slices.Equal) {
				continue
			}
			other.pos = newLeaders(m, topic, other.sets, other.replicas)
			if other.better(best, m, topic, rng) {
				best = other
			}
		}
	}
	out := make([]Partition, 0, n)
	for k, set := range best.sets {
		if best.pos != nil {
			// The leader goes first; the others keep their order.
			lead := set[best.pos[k]]
			copy(set[1:best.pos[k]+1], set[:best.pos[k]])
			set[0] = lead
		}
		out = append(out, Partition{Topic: topic, Partition: int32(existing + k), Replicas: m.brokerIDs(set)})
	}
	return out, nil
}

// placement is the replicas of a topic's new partitions: sets in placement
// order, the cluster's replica count per broker with them, and the
// position of each one's preferred leader (nil: the first).
type placement struct {
	sets     [][]int
	replicas []int
	pos      []int32
}

// placeOrder is an order in which placeReplicas fills a partition.
type placeOrder int

const (
	// orderLeaders gives the first replica to the broker that leads the
	// fewest partitions of the topic, counting the first replicas placed
	// before it: what PlacePartitions always did, so that the first
	// replicas alone spread the topic's leaders.
	orderLeaders placeOrder = iota
	// orderLeadersNotDemoted is orderLeaders over the brokers that are
	// not demoted: each partition's first replica on such a broker goes to
	// the one that leads the fewest of the topic, and the replicas before
	// it to demoted brokers only where no other will do.
	orderLeadersNotDemoted
	// orderReplicas is replica balance alone.
	orderReplicas
)

// placeReplicas places n new partitions of topic at rf. Each replica goes,
// in KIP-708's order, to a broker whose zone (then rack) the partition does
// not use yet, then (by order) to a broker that should lead, then to the
// fewest replicas of the topic, then of the cluster, then the lowest id.
func placeReplicas(m *model, topic string, n, rf int, order placeOrder) placement {
	nb := len(m.bs)
	topicReplicas := make([]int, nb)
	topicLeaders := make([]int, nb)
	clusterReplicas := make([]int, nb)
	for i := range m.ps {
		inTopic := m.topic(i) == topic
		for k, b := range m.orig(i) {
			clusterReplicas[b]++
			if inTopic {
				topicReplicas[b]++
				if k == 0 {
					topicLeaders[b]++
				}
			}
		}
	}
	sets := make([][]int, 0, n)
	for range n {
		set := make([]int, 0, rf)
		// leader: the set holds its designated leader already.
		leader := order == orderReplicas
		for len(set) < rf {
			best := -1
			var bestKey [5]int64
			for b := range nb {
				if !m.bs[b].receiving || containsInt(set, b) {
					continue
				}
				lead := int64(0)
				switch {
				case leader:
				case order == orderLeadersNotDemoted && m.bs[b].demoted:
					lead = math.MinInt64
				default:
					lead = -int64(topicLeaders[b])
				}
				key := [5]int64{int64(m.topo.newValues(set, b)), lead,
					-int64(topicReplicas[b]), -int64(clusterReplicas[b]), -int64(b)}
				if best < 0 || compareKeys(key[:], bestKey[:]) > 0 {
					best, bestKey = b, key
				}
			}
			if !leader && (order == orderLeaders || !m.bs[best].demoted) {
				topicLeaders[best]++
				leader = true
			}
			topicReplicas[best]++
			clusterReplicas[best]++
			set = append(set, best)
		}
		sets = append(sets, set)
	}
	return placement{sets: sets, replicas: clusterReplicas}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// placeDetail says why too few brokers can receive a new partition's
// replicas: the brokers that are down, and those a running operation
// drains, take none.
func placeDetail(rf, leaving int) string {
	if leaving == 0 {
		return fmt.Sprintf("replication factor %d needs as many alive brokers", rf)
	}
	return fmt.Sprintf("replication factor %d needs as many alive brokers that no unfinished operation drains (%d are being drained)", rf, leaving)
}
