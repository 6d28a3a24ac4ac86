package engine

// SetLeadersByLoad turns on or off the hand-over of the ceilings of the
// leader ranges to lighter brokers (leadersToLighter), for tests that
// compare a plan with the plan without it. It returns the setting before.
func SetLeadersByLoad(on bool) (was bool) {
	was, leadersByLoad = leadersByLoad, on
	return was
}

// SetPlaceLeaders turns on or off the choice of new partitions' preferred
// leaders among their replicas (newLeaders), for tests that compare
// placements with and without it. It returns the setting before.
func SetPlaceLeaders(on bool) (was bool) {
	was, placeLeadersByCluster = placeLeadersByCluster, on
	return was
}
