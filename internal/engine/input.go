package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// brokerFacts is a broker with what the planner derives about it.
type brokerFacts struct {
	Broker
	added   bool
	removed bool
	// receiving: alive and staying, so it may receive replicas.
	receiving bool
	// frozen: offline and staying; it keeps what it has and receives nothing.
	frozen bool
	// demoted: it leads only what no other receiving replica can
	// (Options.DemotedBrokers).
	demoted  bool
	hasLimit bool
	limit    int64
	// other is disk use that no known replica explains.
	other int64
}

// partitionFacts is a partition in planner order. There are millions of
// these at the largest scales, and passes over all of them: they hold no
// pointer, which the garbage collector would scan, and take 32 bytes.
// The topic and the original replicas are the model's (model.topic and
// model.orig).
type partitionFacts struct {
	topicAt int32 // the topic is model.topics[topicAt]
	part    int32
	// tier is 1 + the partition's index in model.tiers, 0 when a new
	// replica copies its whole size.
	tier int32
	// factor is the replication factor after the change (rf).
	factor int32
	n      int32 // the original replicas are model.arena[first:first+n]
	// first is 32 bits, as the others, so that a partition takes 32 bytes
	// rather than 40: at 933,000 partitions that is 7.5 MB of each plan,
	// and no cluster holds 4 billion replicas.
	first uint32
	size  int64
}

// rf is the replication factor after the change.
func (p *partitionFacts) rf() int { return int(p.factor) }

// model is the validated, sorted, indexed input.
type model struct {
	o      Options
	bs     []brokerFacts // sorted by id
	index  map[int32]int
	ps     []partitionFacts // sorted by topic, partition
	topics []string         // each once, in order
	arena  []int            // the partitions' original replicas
	// tiers are the bytes of the partitions a new replica copies less of
	// than their size (partitionFacts.tier): a few, kept apart.
	tiers    []tierFacts
	topo     topology
	warnings []string
}

// orig is partition i's original replicas, as broker indices in replica
// order.
func (m *model) orig(i int) []int {
	p := &m.ps[i]
	first := int(p.first)
	end := first + int(p.n)
	return m.arena[first:end:end]
}

// topic is partition i's topic.
func (m *model) topic(i int) string { return m.topics[m.ps[i].topicAt] }

func (m *model) warnf(format string, args ...any) {
	m.warnings = append(m.warnings, fmt.Sprintf(format, args...))
}

// brokerIDs renders broker indices as ids.
func (m *model) brokerIDs(set []int) []int32 {
	out := make([]int32, len(set))
	for i, b := range set {
		out[i] = m.bs[b].ID
	}
	return out
}

// buildModel validates and indexes the input. Every problem is collected
// into one *InputError; options are validated first and reported alone.
func buildModel(c Cluster, ch Change, o Options) (*model, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, &InputError{Problems: unjoin(err)}
	}
	in := &inputCheck{m: &model{o: o, index: map[int32]int{}}}
	in.brokers(c, ch)
	hasPartitions := in.partitions(c, ch)
	in.replicationFactors(ch, hasPartitions)
	if len(in.problems) > 0 {
		return nil, &InputError{Problems: in.problems}
	}
	m := in.m
	for i := range m.ps {
		if rf, ok := ch.ReplicationFactor[m.topic(i)]; ok {
			m.ps[i].factor = int32(rf)
		}
	}

	racks := make([]string, len(m.bs))
	receiving := make([]bool, len(m.bs))
	for i, b := range m.bs {
		racks[i], receiving[i] = b.Rack, b.receiving
	}
	m.topo = newTopology(racks, receiving, o.Awareness)
	m.warnBrokers()
	return m, nil
}

// inputCheck is a model being built, and every problem its input has so
// far, in the order they are found.
type inputCheck struct {
	m        *model
	problems []error
}

func (in *inputCheck) add(err error) { in.problems = append(in.problems, err) }

// brokers indexes the cluster's brokers and those added, by id, and marks
// those removed.
func (in *inputCheck) brokers(c Cluster, ch Change) {
	m := in.m
	if len(c.Brokers)+len(ch.AddBrokers) == 0 {
		in.add(errors.New("the cluster has no brokers"))
	}
	byID := func(bs []Broker) []Broker {
		return slices.SortedStableFunc(slices.Values(bs), func(a, b Broker) int { return cmp.Compare(a.ID, b.ID) })
	}
	for _, b := range byID(c.Brokers) {
		in.addBroker(b, false)
	}
	for _, b := range byID(ch.AddBrokers) {
		in.addBroker(b, true)
	}
	slices.SortFunc(m.bs, func(a, b brokerFacts) int { return cmp.Compare(a.ID, b.ID) })
	for i := range m.bs {
		m.index[m.bs[i].ID] = i
	}
	seenRemove := map[int32]bool{}
	for _, id := range slices.Sorted(slices.Values(ch.RemoveBrokers)) {
		i, ok := m.index[id]
		switch {
		case !ok:
			in.add(&BrokerError{id, errors.New("is to be removed but is not in the cluster")})
		case seenRemove[id]:
			in.add(&BrokerError{id, errors.New("is listed twice for removal")})
		case m.bs[i].added:
			in.add(&BrokerError{id, errors.New("is both added and removed")})
		default:
			m.bs[i].removed = true
		}
		seenRemove[id] = true
	}
	for i := range m.bs {
		b := &m.bs[i]
		b.receiving = b.Alive && !b.removed
		b.frozen = !b.Alive && !b.removed
		b.demoted = slices.Contains(m.o.DemotedBrokers, b.ID)
		if b.CapacityBytes > 0 {
			b.hasLimit = true
			b.limit = diskLimit(b.CapacityBytes, m.o.MinFreeDiskPercent)
		}
	}
}

func (in *inputCheck) addBroker(b Broker, added bool) {
	m := in.m
	if b.ID < 0 {
		in.add(&BrokerError{b.ID, errors.New("broker id is negative")})
		return
	}
	if b.CapacityBytes < 0 {
		in.add(&BrokerError{b.ID, fmt.Errorf("capacity %d bytes is negative", b.CapacityBytes)})
	}
	if b.UsedBytes < 0 {
		in.add(&BrokerError{b.ID, fmt.Errorf("used bytes %d is negative", b.UsedBytes)})
	}
	if _, dup := m.index[b.ID]; dup {
		if added {
			in.add(&BrokerError{b.ID, errors.New("is added but already in the cluster")})
		} else {
			in.add(&BrokerError{b.ID, errors.New("is listed twice")})
		}
		return
	}
	m.index[b.ID] = -1
	m.bs = append(m.bs, brokerFacts{Broker: b, added: added})
}

// partitions checks and indexes the partitions, in sorted order, so that
// the problems (like the plan) do not depend on the input's order. It
// returns the topics with partitions, of those whose replication factor
// changes: a lookup in an empty map costs next to nothing, an update per
// partition of a map of every topic did not.
func (in *inputCheck) partitions(c Cluster, ch Change) (hasPartitions map[string]bool) {
	m := in.m
	total := 0
	for i := range c.Partitions {
		total += len(c.Partitions[i].Replicas)
	}
	at, strict := sortedOrder(c.Partitions)
	arena := make([]int, 0, total)
	m.ps = make([]partitionFacts, 0, len(c.Partitions))
	hasPartitions = map[string]bool{}
	brokerAt := m.brokerLookup()
	for n := range c.Partitions {
		p := &c.Partitions[at(n)]
		perr := func(format string, args ...any) {
			in.add(&PartitionError{Topic: p.Topic, Partition: p.Partition, Err: fmt.Errorf(format, args...)})
		}
		ok := true
		if p.Topic == "" {
			perr("topic name is empty")
			ok = false
		}
		if p.Partition < 0 {
			perr("partition index is negative")
			ok = false
		}
		if !strict && n > 0 && comparePartitions(c.Partitions[at(n-1)], *p) == 0 {
			perr("is listed twice")
			continue
		}
		if p.SizeBytes < 0 {
			perr("size %d bytes is negative", p.SizeBytes)
			ok = false
		}
		if p.CopyBytes < 0 || p.RemoteBytes < 0 {
			perr("copy bytes %d or remote bytes %d is negative", p.CopyBytes, p.RemoteBytes)
			ok = false
		}
		if len(p.Replicas) == 0 {
			perr("has no replicas")
			ok = false
		}
		start := len(arena)
		for k, r := range p.Replicas {
			i, known := brokerAt(r)
			switch {
			case !known:
				perr("replica on unknown broker %d", r)
				ok = false
			case slices.Contains(p.Replicas[:k], r):
				perr("broker %d is listed twice in its replicas", r)
				ok = false
			default:
				arena = append(arena, i)
			}
		}
		orig := arena[start:len(arena):len(arena)]
		if !ok {
			continue
		}
		if len(p.Replicas) > len(m.bs) {
			perr("replication factor %d is more than the %d brokers", len(p.Replicas), len(m.bs))
			continue
		}
		if _, changes := ch.ReplicationFactor[p.Topic]; changes {
			hasPartitions[p.Topic] = true
		}
		if len(m.topics) == 0 || m.topics[len(m.topics)-1] != p.Topic {
			m.topics = append(m.topics, p.Topic)
		}
		m.ps = append(m.ps, partitionFacts{topicAt: int32(len(m.topics) - 1), part: p.Partition, tier: m.tierOf(p), size: p.SizeBytes,
			first: uint32(start), n: int32(len(orig)), factor: int32(len(orig))})
	}
	m.arena = arena
	return hasPartitions
}

// sortedOrder returns the index in ps of the n-th partition in sorted
// order, and whether ps is in strictly increasing order, with no partition
// twice. Input that is already in order, as a plan's target is, needs
// neither the sort nor the order, nor a comparison of each partition with
// the one before to find those listed twice.
func sortedOrder(ps []Partition) (at func(n int) int, strict bool) {
	strict = true
	for i := 1; i < len(ps) && strict; i++ {
		strict = comparePartitions(ps[i-1], ps[i]) < 0
	}
	if strict || slices.IsSortedFunc(ps, comparePartitions) {
		return func(n int) int { return n }, strict
	}
	order := make([]int32, len(ps))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return comparePartitions(ps[a], ps[b])
	})
	return func(n int) int { return int(order[n]) }, false
}

// brokerLookup returns the index of a broker id. Broker ids are small
// numbers in practice: a slice finds a replica's broker in a fraction of a
// map's time, which counts at millions of replicas. Ids beyond it use the
// map.
func (m *model) brokerLookup() func(id int32) (int, bool) {
	dense := make([]int32, 0, 1024)
	for i, b := range m.bs {
		if b.ID < int32(cap(dense)) {
			dense = dense[:max(len(dense), int(b.ID)+1)]
			dense[b.ID] = int32(i) + 1 // 0: no broker
		}
	}
	return func(id int32) (int, bool) {
		if id >= 0 && int(id) < len(dense) {
			return int(dense[id]) - 1, dense[id] > 0
		}
		i, ok := m.index[id]
		return i, ok
	}
}

// replicationFactors checks the replication factors the change sets.
func (in *inputCheck) replicationFactors(ch Change, hasPartitions map[string]bool) {
	topics := make([]string, 0, len(ch.ReplicationFactor))
	for t := range ch.ReplicationFactor {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		rf := ch.ReplicationFactor[t]
		switch {
		case !hasPartitions[t]:
			in.add(fmt.Errorf("topic %q: replication factor change for a topic with no partitions in the cluster", t))
		case rf < 1:
			in.add(fmt.Errorf("topic %q: replication factor %d is below 1", t, rf))
		case rf > len(in.m.bs):
			in.add(fmt.Errorf("topic %q: replication factor %d is more than the %d brokers", t, rf, len(in.m.bs)))
		}
	}
}

// warnBrokers records facts about brokers that the user should see.
func (m *model) warnBrokers() {
	var unknown, rackless, offline []int32
	for _, b := range m.bs {
		if b.removed {
			continue
		}
		if !b.hasLimit {
			unknown = append(unknown, b.ID)
		}
		if b.Rack == "" {
			rackless = append(rackless, b.ID)
		}
		if b.frozen {
			offline = append(offline, b.ID)
		}
	}
	if len(unknown) > 0 {
		m.warnf("capacity unknown for brokers %s: disk checks skipped for them", idList(unknown))
	}
	if len(rackless) > 0 && len(rackless) < len(m.bs) {
		m.warnf("brokers %s have no rack: they are treated as one rack", idList(rackless))
	}
	if len(offline) > 0 {
		m.warnf("brokers %s are offline: they keep their replicas and receive none", idList(offline))
	}
}

func idList(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return "[" + strings.Join(s, " ") + "]"
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// tierFacts are what a tiered partition's new replica copies and what
// stays in remote storage (Partition.CopyBytes and RemoteBytes).
type tierFacts struct{ copied, remote int64 }

// tierOf records p's tier facts when a new replica copies less than its
// size or it keeps bytes in remote storage, and returns its
// partitionFacts.tier. A CopyBytes above the size counts as the size:
// what a new replica copies is at most what its leader holds.
func (m *model) tierOf(p *Partition) int32 {
	if (p.CopyBytes == 0 || p.CopyBytes >= p.SizeBytes) && p.RemoteBytes == 0 {
		return 0
	}
	t := tierFacts{copied: p.SizeBytes, remote: p.RemoteBytes}
	if p.CopyBytes > 0 {
		t.copied = min(p.CopyBytes, p.SizeBytes)
	}
	m.tiers = append(m.tiers, t)
	return int32(len(m.tiers))
}

// copyBytes is what a new replica of p copies: its size unless it tiers.
func (m *model) copyBytes(p *partitionFacts) int64 {
	if p.tier == 0 {
		return p.size
	}
	return m.tiers[p.tier-1].copied
}

// remoteBytes is what p keeps in remote storage only.
func (m *model) remoteBytes(p *partitionFacts) int64 {
	if p.tier == 0 {
		return 0
	}
	return m.tiers[p.tier-1].remote
}
