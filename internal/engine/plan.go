package engine

import (
	"cmp"
	"slices"
)

// Move changes the replicas of one partition: one AlterPartitionAssignments
// entry. Adding and Removing are the replicas that differ, in Kafka's words
// for an ongoing reassignment. Bytes is what the move copies: the partition's
// size once per added replica, or for a tiered topic its CopyBytes. A move that only removes replicas (a lower
// replication factor) copies nothing.
type Move struct {
	Topic       string  `json:"topic"`
	Partition   int32   `json:"partition"`
	OldReplicas []int32 `json:"old_replicas"`
	NewReplicas []int32 `json:"new_replicas"`
	Adding      []int32 `json:"adding,omitempty"`
	Removing    []int32 `json:"removing,omitempty"`
	Bytes       int64   `json:"bytes"`
	// RemoteBytes is what of a partition of a tiered topic stays in
	// remote storage when the move adds a replica (Partition.RemoteBytes):
	// the new replica builds its state from there before it copies
	// (TieredStartTime). Zero for a move that adds no replica.
	RemoteBytes int64 `json:"remote_bytes,omitempty"`
	// GrowthBytesPerSec is how fast producers wrote to the partition
	// recently (SetGrowth): a new replica copies that too before it joins
	// the ISR, so the copy takes longer than Bytes at the throttle.
	GrowthBytesPerSec float64 `json:"growth_bytes_per_sec,omitempty"`
}

// Step is one AlterPartitionAssignments request: at most max_moves_per_step
// moves, submitted together.
type Step struct {
	Moves []Move `json:"moves"`
}

// Group is a set of moves in flight together. The executor submits every
// step of a group and waits until all of its moves are done (and the removed
// replicas' space is back) before the next group starts. Within a group a
// partition moves at most once, and at most max_moves_per_broker moves touch
// any broker.
type Group struct {
	Steps []Step `json:"steps"`
	// Peak is the disk use of every broker that gains or loses a replica in
	// the group, while the group runs: both copies of every move counted.
	Peak []BrokerBytes `json:"peak"`
	// Bytes is the data the group copies.
	Bytes int64 `json:"bytes"`
	// BusiestBrokerBytes is the most data one broker receives or, as the
	// partitions' leader, sends in this group: it sets the group's duration.
	BusiestBrokerBytes int64 `json:"busiest_broker_bytes"`
}

// Moves returns the group's moves in step order.
func (g Group) Moves() Moves {
	var ms Moves
	for _, s := range g.Steps {
		ms = append(ms, s.Moves...)
	}
	return ms
}

// BrokerBytes is one broker's disk use against its limit (capacity less
// min_free_disk_percent). LimitBytes is zero when the capacity is unknown.
type BrokerBytes struct {
	Broker     int32 `json:"broker"`
	Bytes      int64 `json:"bytes"`
	LimitBytes int64 `json:"limit_bytes,omitempty"`
}

// Reorder changes only the order of a partition's replicas, to move its
// preferred leader. It copies no data, so it is not a move; the executor sends
// it with AlterPartitionAssignments like a move and it completes at once.
type Reorder struct {
	Topic       string  `json:"topic"`
	Partition   int32   `json:"partition"`
	OldReplicas []int32 `json:"old_replicas"`
	NewReplicas []int32 `json:"new_replicas"`
}

// Load is what one broker holds.
type Load struct {
	Replicas int   `json:"replicas"`
	Leaders  int   `json:"preferred_leaders"`
	Bytes    int64 `json:"bytes"`
}

// Range is an inclusive range of counts.
type Range struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Contains reports whether n is in the range.
func (r Range) Contains(n int) bool { return n >= r.Min && n <= r.Max }

// BrokerProjection is one broker before and after the plan, with the balance
// it is judged against: the share of replicas and preferred leaders that the
// racks allow it (Range), and its share of the bytes.
type BrokerProjection struct {
	Broker         int32  `json:"broker"`
	Rack           string `json:"rack,omitempty"`
	Alive          bool   `json:"alive"`
	Added          bool   `json:"added,omitempty"`
	Removed        bool   `json:"removed,omitempty"`
	Before         Load   `json:"before"`
	After          Load   `json:"after"`
	TargetReplicas Range  `json:"target_replicas"`
	TargetLeaders  Range  `json:"target_leaders"`
	TargetBytes    int64  `json:"target_bytes"`
	// DiskBefore and DiskAfter include bytes on disk that no known replica
	// explains. PeakDiskBytes is the highest use at any group, both copies of
	// every move in flight counted.
	DiskBefore    int64 `json:"disk_before"`
	DiskAfter     int64 `json:"disk_after"`
	PeakDiskBytes int64 `json:"peak_disk_bytes"`
	LimitBytes    int64 `json:"limit_bytes,omitempty"`
}

// Plan is the planner's answer. It is plain data with JSON tags, so that the
// executor can persist it and resume it, and `terraform plan` can show it.
type Plan struct {
	// Target is every partition's replica list once the plan is done, sorted
	// by topic and partition. Partitions that do not change are included.
	Target Partitions `json:"target"`
	// Groups run one after another; see Group.
	Groups []Group `json:"groups"`
	// Reorders change preferred leaders without moving data.
	Reorders []Reorder `json:"reorders"`
	// Brokers are the per-broker projections, sorted by broker id.
	Brokers []BrokerProjection `json:"brokers"`
	// ReplicaMoves counts replicas copied: the sum of len(Adding).
	ReplicaMoves int `json:"replica_moves"`
	// TotalBytes is the data copied over the whole plan.
	TotalBytes int64 `json:"total_bytes"`
	// RemoteBytes is what the moving partitions of tiered topics keep in
	// remote storage, counted once per partition: no new replica copies
	// it, so TotalBytes leaves it out (Partition.RemoteBytes).
	RemoteBytes int64 `json:"remote_bytes,omitempty"`
	// ThrottleBytesPerSec is the throttle EstimatedSeconds assumes.
	ThrottleBytesPerSec int64 `json:"throttle_bytes_per_sec"`
	// MaxMovesPerBroker and MaxMovesPerStep are the limits the groups were
	// formed under; the continuous schedule (Ready) and the executor's
	// submissions keep to them. Records of plans from before they were
	// kept get the operation's limits when they are read.
	MaxMovesPerBroker int `json:"max_moves_per_broker,omitempty"`
	MaxMovesPerStep   int `json:"max_moves_per_step,omitempty"`
	// GroupsInTurn runs the groups one after another, each waiting for the
	// one before, instead of the continuous schedule: the planner found
	// that faster for this plan (see groupsFaster).
	GroupsInTurn bool `json:"groups_in_turn,omitempty"`
	// EstimatedSeconds is the plan's ETA (see ETA) at that throttle. The
	// planner counts the groups and the finish; the executor sets it again
	// with the brokers to add and remove when it records the plan.
	EstimatedSeconds int64 `json:"estimated_seconds"`
	// Score measures the target against the lower bound and the balance
	// that the racks allow.
	Score Score `json:"score"`
	// Warnings are facts the user should see but that do not stop the plan,
	// such as brokers whose capacity is unknown.
	Warnings []string `json:"warnings"`
}

// Moves returns every move in execution order.
func (p *Plan) Moves() Moves {
	var ms Moves
	for _, g := range p.Groups {
		for _, s := range g.Steps {
			ms = append(ms, s.Moves...)
		}
	}
	return ms
}

// EachMove calls fn for every move in execution order, with its group and
// step index.
func (p *Plan) EachMove(fn func(group, step int, m Move)) {
	for gi, g := range p.Groups {
		for si, s := range g.Steps {
			for _, m := range s.Moves {
				fn(gi, si, m)
			}
		}
	}
}

// PartitionSize is one moving partition and its size.
type PartitionSize struct {
	Topic     string
	Partition int32
	SizeBytes int64
}

// MovingPartitions lists each partition the plan moves once, with its
// size: what a growth rate is measured for (SetGrowth).
func (p *Plan) MovingPartitions() []PartitionSize {
	type key struct {
		topic     string
		partition int32
	}
	var out []PartitionSize
	seen := make(map[key]bool)
	p.EachMove(func(_, _ int, m Move) {
		k := key{m.Topic, m.Partition}
		if len(m.Adding) == 0 || seen[k] {
			return
		}
		seen[k] = true
		out = append(out, PartitionSize{Topic: m.Topic, Partition: m.Partition, SizeBytes: m.Bytes / int64(len(m.Adding))})
	})
	return out
}

// WithOwnMoves returns a copy of p whose groups, steps and moves are its
// own, so that SetGrowth on it leaves p as it is; the rest is shared.
func (p *Plan) WithOwnMoves() *Plan {
	cp := *p
	cp.Groups = slices.Clone(p.Groups)
	for gi := range cp.Groups {
		cp.Groups[gi].Steps = slices.Clone(cp.Groups[gi].Steps)
		for si := range cp.Groups[gi].Steps {
			cp.Groups[gi].Steps[si].Moves = slices.Clone(cp.Groups[gi].Steps[si].Moves)
		}
	}
	return &cp
}

// SetGrowth sets every move's GrowthBytesPerSec from rate (bytes/s by
// topic and partition; a partition it lacks grows at 0). The ETA counts
// them from then on; EstimatedSeconds is the caller's to set again.
func (p *Plan) SetGrowth(rate map[string]map[int32]float64) {
	for gi := range p.Groups {
		for si := range p.Groups[gi].Steps {
			moves := p.Groups[gi].Steps[si].Moves
			for i := range moves {
				moves[i].GrowthBytesPerSec = rate[moves[i].Topic][moves[i].Partition]
			}
		}
	}
}

// Moves is a list of moves.
type Moves []Move

// Sorted returns the moves sorted by topic and partition; moves of one
// partition keep their execution order.
func (ms Moves) Sorted() Moves {
	s := slices.Clone(ms)
	slices.SortStableFunc(s, func(a, b Move) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return s
}

// Each calls fn for every move in order.
func (ms Moves) Each(fn func(Move)) {
	for _, m := range ms {
		fn(m)
	}
}

// Bytes is the data the moves copy.
func (ms Moves) Bytes() int64 {
	var n int64
	for _, m := range ms {
		n += m.Bytes
	}
	return n
}

// Partitions is a list of partitions.
type Partitions []Partition

// Sorted returns the partitions sorted by topic and partition.
func (ps Partitions) Sorted() Partitions {
	s := slices.Clone(ps)
	slices.SortFunc(s, comparePartitions)
	return s
}

// Each calls fn for every partition in order.
func (ps Partitions) Each(fn func(Partition)) {
	for _, p := range ps {
		fn(p)
	}
}

func comparePartitions(a, b Partition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Traffic is what one broker gains and gives up over a plan: the replicas
// it receives (MovesIn, BytesIn copied to it) and those it drops
// (MovesOut, BytesOut freed on it).
type Traffic struct {
	MovesIn  int   `json:"moves_in"`
	MovesOut int   `json:"moves_out"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// Traffic returns every broker's traffic over the plan, by broker id; a
// broker no move touches is absent. It summarises the moves without
// listing them: at 2.8 million replicas a plan holds about 195,000.
func (p *Plan) Traffic() map[int32]Traffic {
	out := map[int32]Traffic{}
	p.EachMove(func(_, _ int, m Move) {
		if len(m.Adding) == 0 && len(m.Removing) == 0 {
			return
		}
		// A move copies its partition once to each replica it adds.
		per := m.Bytes
		if len(m.Adding) > 0 {
			per = m.Bytes / int64(len(m.Adding))
		}
		for _, b := range m.Adding {
			t := out[b]
			t.MovesIn++
			t.BytesIn += per
			out[b] = t
		}
		for _, b := range m.Removing {
			t := out[b]
			t.MovesOut++
			t.BytesOut += per
			out[b] = t
		}
	})
	return out
}
