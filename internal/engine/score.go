package engine

import (
	"errors"
	"fmt"
	"slices"
)

// Score measures an assignment against the current one and against the
// balance the racks allow. Counts are over the brokers that may hold
// replicas once the change is done (alive and not removed).
type Score struct {
	Brokers    int `json:"brokers"`
	Partitions int `json:"partitions"`
	Replicas   int `json:"replicas"`

	// Moves counts replicas copied to reach the assignment; MovedBytes the
	// data they copy.
	Moves      int   `json:"moves"`
	MovedBytes int64 `json:"moved_bytes"`
	// LowerBound is the fewest replica copies any assignment needs to be
	// balanced (every broker within its replica range), spread as the racks
	// allow, off the removed brokers and at the new replication factors. It
	// is the larger of two counts: what brokers below their range must gain,
	// and what each partition must gain on its own (missing replicas, missing
	// racks). Where disk limits or racks keep an assignment from balance
	// (ReplicasOutOfRange > 0), it may move fewer.
	LowerBound int `json:"lower_bound"`
	// MoveRatio is Moves / LowerBound (Moves when the bound is zero).
	MoveRatio float64 `json:"move_ratio"`

	// Replica counts per broker: the extremes, their difference, the best
	// difference the racks allow, and the replicas outside the brokers'
	// balanced ranges, summed over brokers.
	ReplicaMin         int `json:"replica_min"`
	ReplicaMax         int `json:"replica_max"`
	ReplicaSpread      int `json:"replica_spread"`
	ReplicaBoundSpread int `json:"replica_bound_spread"`
	ReplicasOutOfRange int `json:"replicas_out_of_range"`

	// The same for preferred leaders (first replicas), over the brokers
	// that are not demoted (Options.DemotedBrokers).
	LeaderMin         int `json:"leader_min"`
	LeaderMax         int `json:"leader_max"`
	LeaderSpread      int `json:"leader_spread"`
	LeaderBoundSpread int `json:"leader_bound_spread"`
	LeadersOutOfRange int `json:"leaders_out_of_range"`
	// DemotedLeaders counts the partitions a demoted broker leads that
	// another replica could lead.
	DemotedLeaders int `json:"demoted_leaders,omitempty"`

	// ByteSkewPercent is the largest distance of a broker's bytes from its
	// share, in percent of that share. ByteSkewFloorPercent is what no
	// assignment can beat, because the largest partition alone exceeds a
	// share; LargestPartitionPercent is that partition's size in percent of
	// the mean share, the grain that limits byte balance.
	ByteSkewPercent         float64 `json:"byte_skew_percent"`
	ByteSkewFloorPercent    float64 `json:"byte_skew_floor_percent"`
	LargestPartitionPercent float64 `json:"largest_partition_percent"`
	// ByteSkewBroker is the broker furthest from its share: it holds
	// ByteSkewBytes where its share is ByteSkewShare.
	ByteSkewBroker int32 `json:"byte_skew_broker,omitempty"`
	ByteSkewBytes  int64 `json:"byte_skew_bytes,omitempty"`
	ByteSkewShare  int64 `json:"byte_skew_share,omitempty"`

	// RackViolations counts partitions spread over fewer racks (or zones)
	// than the racks allow.
	RackViolations int `json:"rack_violations"`
}

// Balanced reports whether every broker's replicas and preferred leaders are
// within their balanced ranges and every partition is spread as the racks
// allow.
func (s Score) Balanced() bool {
	return s.ReplicasOutOfRange == 0 && s.LeadersOutOfRange == 0 && s.RackViolations == 0
}

// ScoreAssignment measures assignment, an assignment of every partition of c produced
// by any tool, against c's current assignment after change ch. It uses the
// same targets and lower bound as PlanReassignment, so plans from different
// tools compare fairly. assignment must list each partition of c once, with
// the replication factor the change gives it.
func ScoreAssignment(c Cluster, ch Change, assignment []Partition, o Options) (Score, error) {
	m, err := buildModel(c, ch, o)
	if err != nil {
		return Score{}, err
	}
	pl := newPlanner(m, false)
	pl.dropReplicas()
	if err := pl.computeTargets(); err != nil {
		return Score{}, err
	}
	type key struct {
		topic string
		part  int32
	}
	at := make(map[key]int, len(m.ps))
	for i, p := range m.ps {
		at[key{m.topic(i), p.part}] = i
	}
	final := make([][]int, len(m.ps))
	var problems []error
	for _, a := range assignment {
		perr := func(format string, args ...any) {
			problems = append(problems, &PartitionError{Topic: a.Topic, Partition: a.Partition, Err: fmt.Errorf(format, args...)})
		}
		i, ok := at[key{a.Topic, a.Partition}]
		switch {
		case !ok:
			perr("is not in the cluster")
			continue
		case final[i] != nil:
			perr("is listed twice")
			continue
		case len(a.Replicas) != m.ps[i].rf():
			perr("has %d replicas; its replication factor is %d", len(a.Replicas), m.ps[i].rf())
			continue
		}
		set := make([]int, 0, len(a.Replicas))
		for _, r := range a.Replicas {
			b, known := m.index[r]
			if !known {
				perr("replica on unknown broker %d", r)
				break
			}
			if slices.Contains(set, b) {
				perr("broker %d is listed twice in its replicas", r)
				break
			}
			set = append(set, b)
		}
		if len(set) == len(a.Replicas) {
			final[i] = set
		}
	}
	for i, p := range m.ps {
		if final[i] == nil && len(problems) == 0 {
			problems = append(problems, &PartitionError{Topic: m.topic(i), Partition: p.part, Err: errors.New("is missing from the assignment")})
		}
	}
	if len(problems) > 0 {
		return Score{}, &InputError{Problems: problems}
	}
	return pl.score(final, leaderTargets(m.bs, final)), nil
}

// score measures final (leader first) against the planner's targets;
// leaderRng is leaderTargets of final, which the plan already has.
func (pl *planner) score(final [][]int, leaderRng []Range) Score {
	m := pl.model
	t := &m.topo
	var s Score
	nb := len(m.bs)
	count := make([]int, nb)
	lead := make([]int, nb)
	bytes := make([]int64, nb)
	origCount := make([]int, nb)
	var perPart int64
	var maxSize int64
	var kept []int
	for i, p := range m.ps {
		set := final[i]
		s.Partitions++
		s.Replicas += len(set)
		orig := m.orig(i)
		for _, b := range orig {
			origCount[b]++
		}
		for k, b := range set {
			count[b]++
			bytes[b] += p.size
			if k == 0 {
				lead[b]++
			}
			if !slices.Contains(orig, b) {
				s.Moves++
				s.MovedBytes += m.copyBytes(&p)
			}
		}
		if t.deficit(set, p.rf()) > 0 {
			s.RackViolations++
		}
		var need int64
		need, kept = m.copiesNeeded(i, kept)
		perPart += need
		for _, b := range set {
			if m.bs[b].receiving {
				maxSize = max(maxSize, p.size)
				break
			}
		}
	}

	// Balance bound: brokers below their range must gain the difference, and
	// replicas that the clamped counts leave over must land somewhere.
	var below, clamped int64
	for b, bi := range m.bs {
		if !bi.receiving {
			continue
		}
		r := pl.tg.rng[b]
		below += int64(max(0, r.Min-origCount[b]))
		clamped += int64(min(max(origCount[b], r.Min), r.Max))
	}
	bound := max(perPart, below+max(0, pl.tg.total-clamped))
	s.LowerBound = int(bound)
	s.MoveRatio = float64(s.Moves)
	if bound > 0 {
		s.MoveRatio = float64(s.Moves) / float64(bound)
	}
	pl.scoreBalance(&s, count, lead, bytes, leaderRng, maxSize)
	return s
}

// copiesNeeded is how many copies partition i needs whatever the
// assignment: the missing replicas and the missing spread of what stays.
// Replicas on offline brokers that stay cannot be replaced, and a
// partition with no online replica cannot move at all (none). kept is
// scratch space, returned for the next call.
func (m *model) copiesNeeded(i int, kept []int) (int64, []int) {
	p := &m.ps[i]
	t := &m.topo
	kept = kept[:0]
	replaceable, online := 0, false
	for _, b := range m.orig(i) {
		online = online || m.bs[b].Alive
		if !m.bs[b].removed {
			kept = append(kept, b)
			if !m.bs[b].frozen {
				replaceable++
			}
		}
	}
	if !online {
		return 0, kept
	}
	missing := max(0, p.rf()-len(kept))
	need := int64(missing)
	for d := range t.dims {
		short := t.need(d, p.rf()) - t.distinct(kept, d, -1, -1)
		need = max(need, int64(min(short, missing+replaceable)))
	}
	return need, kept
}

// scoreBalance sets s's balance figures from the receiving brokers'
// replica, leader and byte counts; maxSize is the largest partition on a
// receiving broker.
func (pl *planner) scoreBalance(s *Score, count, lead []int, bytes []int64, leaderRng []Range, maxSize int64) {
	var maxShare, sumShare int64
	var lowest, highest, leadLowest, leadHighest Range // ranges at the extremes
	leaders := 0                                       // brokers counted in the leader figures
	for b, bi := range pl.bs {
		if !bi.receiving {
			continue
		}
		r, lr := pl.tg.rng[b], leaderRng[b]
		if s.Brokers == 0 {
			s.ReplicaMin, s.ReplicaMax = count[b], count[b]
			lowest, highest = r, r
		}
		s.Brokers++
		s.ReplicaMin, s.ReplicaMax = min(s.ReplicaMin, count[b]), max(s.ReplicaMax, count[b])
		lowest.Min, highest.Max = min(lowest.Min, r.Min), max(highest.Max, r.Max)
		s.ReplicasOutOfRange += outside(count[b], r)
		if bi.demoted {
			// Its range holds only what it must lead; it is left out of
			// the leader spread, which it would widen to no purpose.
			s.DemotedLeaders += max(0, lead[b]-lr.Max)
		} else {
			if leaders == 0 {
				s.LeaderMin, s.LeaderMax = lead[b], lead[b]
				leadLowest, leadHighest = lr, lr
			}
			leaders++
			s.LeaderMin, s.LeaderMax = min(s.LeaderMin, lead[b]), max(s.LeaderMax, lead[b])
			leadLowest.Min, leadHighest.Max = min(leadLowest.Min, lr.Min), max(leadHighest.Max, lr.Max)
			s.LeadersOutOfRange += outside(lead[b], lr)
		}
		share := pl.byteTarget[b]
		sumShare += share
		maxShare = max(maxShare, share)
		if share > 0 {
			if skew := percent(abs64(bytes[b]-share), share); skew > s.ByteSkewPercent {
				s.ByteSkewPercent, s.ByteSkewBroker, s.ByteSkewBytes, s.ByteSkewShare = skew, bi.ID, bytes[b], share
			}
		}
	}
	s.ReplicaSpread = s.ReplicaMax - s.ReplicaMin
	s.LeaderSpread = s.LeaderMax - s.LeaderMin
	// The spread the balanced ranges allow: lowest minimum to highest
	// maximum. With even racks it is 0 or 1.
	s.ReplicaBoundSpread = highest.Max - lowest.Min
	s.LeaderBoundSpread = leadHighest.Max - leadLowest.Min
	if maxShare > 0 && maxSize > maxShare {
		s.ByteSkewFloorPercent = percent(maxSize-maxShare, maxShare)
	}
	if s.Brokers > 0 && sumShare > 0 {
		s.LargestPartitionPercent = percent(maxSize*int64(s.Brokers), sumShare)
	}
}

func outside(n int, r Range) int {
	switch {
	case n < r.Min:
		return r.Min - n
	case n > r.Max:
		return n - r.Max
	}
	return 0
}

// percent is 100·a/b rounded to two decimals, computed in integers so that
// plans are identical on every platform.
func percent(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	// a and b are byte counts; scale down to avoid overflow of a·10000.
	for a > 1<<40 || b > 1<<40 {
		a, b = a>>1, b>>1
	}
	if b == 0 {
		return 0
	}
	return float64((a*10000+b/2)/b) / 100
}
