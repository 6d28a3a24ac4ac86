package engine

import "fmt"

// OutOfBalance says which tolerance, if any, a cluster kept balanced at its
// broker count breaks, measured as ScoreAssignment measures any assignment:
//
//   - replicas per broker spread by more than 1 beyond what the racks force;
//   - preferred leaders per broker spread by more than 1 (or than the racks
//     force);
//   - a broker's bytes further from its share than o.MaxDiskSkewPercent (or
//     than the largest partition forces).
//
// None means the cluster is left alone: a balanced cluster plans no change,
// however often it is refreshed. leadersOnly is true when preferred leaders
// are the only problem: then a reorder and an election fix it, and no data
// moves.
func OutOfBalance(c Cluster, o Options) (reasons []string, leadersOnly bool, err error) {
	s, err := ScoreAssignment(c, Change{}, c.Partitions, o)
	if err != nil {
		return nil, false, err
	}
	skew := o.MaxDiskSkewPercent
	if skew <= 0 {
		skew = DefaultMaxDiskSkewPercent
	}
	if s.ReplicaSpread > s.ReplicaBoundSpread+1 {
		reasons = append(reasons, fmt.Sprintf("replicas per broker range from %d to %d, a spread of %d where the racks allow %d",
			s.ReplicaMin, s.ReplicaMax, s.ReplicaSpread, s.ReplicaBoundSpread))
	}
	if s.ByteSkewPercent > max(skew, s.ByteSkewFloorPercent) {
		reasons = append(reasons, fmt.Sprintf("a broker's bytes are %.1f%% from its share, above max_disk_skew_percent %.0f%%",
			s.ByteSkewPercent, skew))
	}
	data := len(reasons)
	if s.LeaderSpread > max(1, s.LeaderBoundSpread) {
		reasons = append(reasons, fmt.Sprintf("preferred leaders per broker range from %d to %d, a spread of %d where the racks allow %d",
			s.LeaderMin, s.LeaderMax, s.LeaderSpread, max(1, s.LeaderBoundSpread)))
	}
	return reasons, data == 0 && len(reasons) > 0, nil
}

// LeadersOnly keeps of plan only what moves no data: its reorders, with a
// target that is the current assignment with them applied.
func LeadersOnly(c Cluster, plan *Plan) *Plan {
	reorder := map[string]Reorder{}
	for _, r := range plan.Reorders {
		reorder[fmt.Sprintf("%s/%d", r.Topic, r.Partition)] = r
	}
	out := &Plan{Brokers: plan.Brokers, ThrottleBytesPerSec: plan.ThrottleBytesPerSec, Score: plan.Score, Warnings: plan.Warnings}
	for _, p := range c.Partitions {
		t := Partition{Topic: p.Topic, Partition: p.Partition, Replicas: append([]int32(nil), p.Replicas...), SizeBytes: p.SizeBytes}
		if r, ok := reorder[fmt.Sprintf("%s/%d", p.Topic, p.Partition)]; ok && SameMembers(r.NewReplicas, p.Replicas) {
			t.Replicas = append([]int32(nil), r.NewReplicas...)
			out.Reorders = append(out.Reorders, Reorder{Topic: p.Topic, Partition: p.Partition, OldReplicas: p.Replicas, NewReplicas: r.NewReplicas})
		}
		out.Target = append(out.Target, t)
	}
	return out
}
