package engine

import "fmt"

// OutOfBalance says which tolerance, if any, a cluster kept balanced at its
// broker count breaks, measured as ScoreAssignment measures any assignment:
//
//   - replicas per broker spread by more than 1 beyond what the racks force;
//   - preferred leaders per broker spread by more than 1 (or than the racks
//     force), or a demoted broker leading what another replica could lead
//     (LeadersOutOfBalance);
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
		reasons = append(reasons, fmt.Sprintf("broker %d's bytes are %.1f%% from its share (%d bytes where its share is %d), above max_disk_skew_percent %.0f%%",
			s.ByteSkewBroker, s.ByteSkewPercent, s.ByteSkewBytes, s.ByteSkewShare, skew))
	}
	data := len(reasons)
	reasons = append(reasons, leaderReasons(s, o)...)
	return reasons, data == 0 && len(reasons) > 0, nil
}

// LeadersOutOfBalance is OutOfBalance for preferred leaders alone: what a
// cluster whose leaders are kept balanced, or that has demoted brokers,
// fixes by a reorder and an election (PlanLeaders), whatever its bytes.
func LeadersOutOfBalance(c Cluster, o Options) ([]string, error) {
	s, err := ScoreAssignment(c, Change{}, c.Partitions, o)
	if err != nil {
		return nil, err
	}
	return leaderReasons(s, o), nil
}

func leaderReasons(s Score, o Options) []string {
	var reasons []string
	if s.LeaderSpread > max(1, s.LeaderBoundSpread) {
		reasons = append(reasons, fmt.Sprintf("preferred leaders per broker range from %d to %d, a spread of %d where the racks allow %d",
			s.LeaderMin, s.LeaderMax, s.LeaderSpread, max(1, s.LeaderBoundSpread)))
	}
	if s.DemotedLeaders > 0 {
		reasons = append(reasons, fmt.Sprintf("demoted brokers %v are the preferred leaders of %d partitions that another replica can lead",
			o.DemotedBrokers, s.DemotedLeaders))
	}
	return reasons
}

// PlanLeaders balances preferred leaders without moving data: every
// partition keeps its replicas, and only their order changes (Reorders),
// with the ranges and the demotions any plan keeps. The executor runs it
// as a reorder and an election.
func PlanLeaders(c Cluster, o Options) (*Plan, error) {
	m, err := buildModel(c, Change{}, o)
	if err != nil {
		return nil, err
	}
	pl := newPlanner(m, true)
	if err := pl.computeTargets(); err != nil {
		return nil, err
	}
	return pl.plan()
}
