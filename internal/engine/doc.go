// Package engine is kafkascale's pure core: every decision about where
// replicas go, in what order they move, how long that takes, and how a
// Kafka Streams app's topics grow. It talks to nothing; adapters in
// internal/kafka turn Kafka's answers into these plain types, and the
// executor (internal/engine/executor) carries the results out.
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
//
// The concerns, and the files that hold them:
//
//   - Input and model: model.go (the types above, Options and their
//     validation), input.go (checking and indexing a Cluster for the
//     planner), errors.go (InputError, InfeasibleError and the constraints
//     they name), topic_rules.go (a topic's replication factor against the
//     live brokers and its min.insync.replicas), sets.go (replica-set
//     comparison).
//   - The reassignment planner: planner.go (PlanReassignment: what must move
//     for a Change), targets.go (the balanced range of replicas each broker
//     may hold, as the racks allow), topology.go (racks as failure domains,
//     and the spread rule of KIP-708), sources.go and srclist.go (which
//     broker gives up which replica), chains.go (chains of moves where no
//     direct one balances), bytes.go (byte balance, for a rebalance only),
//     leaders.go (balancing preferred leaders by reordering replica lists),
//     radix.go (the sort large clusters need).
//   - The plan: schedule.go (splitting each partition's change into moves,
//     and forming disk-safe groups of steps), build.go (assembling the Plan,
//     its projections and disk peaks), plan.go (the Plan's plain data, with
//     JSON tags so the executor can persist it), continuous.go (the
//     continuous schedule: which moves may start now without breaking the
//     groups' disk proof).
//   - The estimate: eta.go (the ETA model: adding and removing brokers,
//     copying, settling, polling, the finish; Timings measured per scaling
//     method), eta_continuous.go (a fluid simulation of the continuous
//     schedule, since it has no closed form).
//   - Measuring: score.go (ScoreAssignment measures any assignment against
//     the same yardsticks as a plan, so a plan made by another tool can be
//     compared fairly), inplace.go (OutOfBalance: whether a cluster kept
//     balanced needs a rebalance, or only a leader reorder), skew.go (brokers
//     that will hold clearly more than their share).
//   - Choosing brokers: leaving.go (ChooseLeaving: which brokers a shrink or
//     replacement drains, dead ones first, failure domains kept even),
//     place.go (PlacePartitions: where a new topic's partitions, or a
//     growing topic's new ones, go; PlacePartitionsAround keeps them off the
//     brokers an unfinished operation drains), newleaders.go (which of a
//     new partition's replicas leads: the topic's leaders even, the
//     cluster's in their balanced ranges, demoted brokers leading only
//     what they must).
//   - Kafka Streams: streams_model.go (an app, its subtopologies and the role
//     of each topic), streams_order.go (downstream apps before upstream
//     ones), streams_fixed.go (internal topics known to keep their count),
//     streams_consumers.go (what growing a topic does to the groups that
//     read it), streams.go (PlanStreamsExpansion: the ordered steps of an
//     expansion, sinks first, then the sources and internal topics in one
//     request, then waiting for the group and notifying).
//
// Every function here is deterministic: the same input gives a byte-identical
// result, whatever the order of brokers and partitions in it. Inputs are never
// modified. Bad input returns an *InputError listing every problem; a change
// that cannot be carried out returns an *InfeasibleError naming the
// constraint, the broker or topic, and by how much it fails. Nothing reads a
// clock: measured times come in as data (ETAInputs).
//
// Priorities, when goals conflict: hard constraints first (rack spread wherever
// enough racks exist, disk capacity at every step), then the fewest replica
// moves, then balance: replicas, then preferred leaders, then bytes. Adding
// or removing brokers and changing replication factors move only the
// replicas they must, and balance bytes through the choice of which replicas
// those are; only a rebalance (the empty Change) spends further moves to bring
// bytes within Options.MaxDiskSkewPercent.
//
// Broker.Alive is false in the zero value: adapters must set it for every
// broker that is up, and for brokers about to be added.
package engine
