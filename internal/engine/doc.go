// Package engine is kafkascale's pure core: the reassignment planner, and the
// placement of new partitions. It talks to nothing; adapters in internal/kafka
// turn Kafka's answers into these plain types and carry plans back to Kafka.
//
// The types a reader must know:
//
//   - Cluster, Broker and Partition describe what exists: brokers with their
//     rack, disk capacity and use, and partitions with their ordered replicas
//     and size. A replica list's first broker is the preferred leader.
//   - Change says what should become true: brokers added, brokers removed, or
//     replication factors changed. The empty Change rebalances in place.
//   - Options carries the limits (rack awareness, moves per step and per
//     broker, free disk, byte skew, throttle); DefaultOptions gives sane ones.
//   - PlanReassignment returns a Plan: the target assignment, the moves
//     arranged in groups of steps, the reorders that only change preferred
//     leaders, per-broker projections, disk peaks and the estimated duration.
//   - ScoreAssignment measures any assignment against the same yardsticks (moves
//     against their lower bound, replica, leader and byte balance, rack
//     spread), so a plan made by another tool can be compared fairly.
//   - PlacePartitions places the new partitions of a growing topic.
//
// Every function here is deterministic: the same input gives a byte-identical
// result, whatever the order of brokers and partitions in it. Inputs are never
// modified. Bad input returns an *InputError listing every problem; a change
// that cannot be carried out returns an *InfeasibleError naming the
// constraint, the broker or topic, and by how much it fails.
//
// Priorities, when goals conflict: hard constraints first (rack spread wherever
// enough racks exist, disk capacity at every step), then the fewest replica
// moves, then balance: replicas, then preferred leaders, then bytes. Adding
// or removing brokers and changing replication factors move only the
// replicas they must, and balance bytes through the choice of which replicas
// those are; only a rebalance (the empty Change) spends further moves to bring
// bytes within max_disk_skew_percent.
//
// Broker.Alive is false in the zero value: adapters must set it for every
// broker that is up, and for brokers about to be added.
package engine
