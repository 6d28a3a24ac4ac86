// Package executor carries out an engine.Plan against a cluster, group by
// group, and drives whole scaling operations (add brokers, reassign, finish,
// remove brokers) as a state machine whose every state is persisted, so an
// interrupted apply resumes where it stopped.
//
// It owns every multi-step operation: a broker-count change or replacement
// (Scale), a rebalance in place (Scale with a Balance), a
// replication-factor change (ChangeReplicationFactor), a topic's growth
// (GrowPartitions), the growth of a Streams app's topics together
// (GrowTogether), a ready plan (RunPlan), a Streams expansion (StreamsRun,
// which grows through GrowTogether), cancelling an unfinished operation
// (Cancel), removing orphaned throttles (ClearOrphanedThrottles),
// creating, configuring and deleting a topic beside an unfinished operation
// (CreateTopic, AlterTopicConfigs, DeleteTopic), a topic's update in the
// order its steps need (UpdateTopic) and forgetting a deleted
// topic's operation (Forget). Operation.Remaining is the one account of
// what an operation has left. Every entry point that moves or places
// replicas (and what callers wrap in Exclusive) first takes the
// cluster-wide operation lease, so operations never overlap on one
// cluster; a topic's creation, config change or deletion waits for it only
// when it could break the operation unfinished now (topics.go). New
// partitions of existing topics are placed in one place, grow.go, for both
// kinds of growth.
//
// The files, one concern each:
//
//   - ports.go: the ports (Kafka, Placement, TopicAdmin, Scaler, Store,
//     Clock, Logger, ...) that internal/kafka, internal/platform and
//     internal/metrics implement.
//   - executor.go: the Executor, its dependencies and settings, Resume, and
//     the phase transitions and saves every operation goes through.
//   - scale.go: the Scale and RunPlan entry points, the pre-check, and
//     Exclusive.
//   - brokers.go: adding, removing and waiting for brokers.
//   - cordon.go: cordoning the leaving brokers (KIP-1066) and removing it.
//   - reassign.go: the reassign phase: throttle rates, then the moves, and
//     how a move stands in the cluster (classify).
//   - continuous.go: running the plan's moves under the continuous schedule,
//     recording each move as started before it is submitted.
//   - throttled_replicas.go: which replicas are throttled, and the entries
//     added and released as moves start and finish.
//   - throttle.go: the rate, and the dynamic throttle (AIMD) that adjusts it
//     from broker metrics.
//   - finish.go: verifying every partition, electing preferred leaders and
//     removing every throttle.
//   - cancel.go: cancelling an unfinished operation, and its preview.
//   - orphans.go: finding and removing throttles no running operation owns.
//   - forget.go: forgetting the record of a deleted topic's operation.
//   - inplace.go: the rebalance at a kept broker count, its preview, and
//     the balance a cancelled or abandoned operation still owes.
//   - topics.go: creating, configuring, updating and deleting topics, and
//     when that waits for the lease (only when it could break an unfinished
//     operation).
//   - replication.go: a replication-factor change, its preview, and what
//     a plan of it would resume or cancel (PreviewReplicationFactorCost).
//   - grow.go: placing and creating new partitions, for a topic or for a
//     Streams app's topics together.
//   - streams.go: a Streams expansion run step by step (quiesce, grow, wait
//     for the group, notify).
//   - preview.go: the pure view of what Scale would do, for a plan.
//   - cost.go: PreviewCost, the one choice of which preview a plan of a
//     broker count shows and of the timings its ETA is measured with.
//   - preview_memo.go: one fresh preview shared per read of the cluster.
//   - planning_snapshot.go: the cluster a refresh saw, kept whole or as a
//     summary, that a plan computes its cost from.
//   - lease*.go: the cluster-wide operation lease: its log, its replay into
//     who holds it, claiming, heartbeating and releasing it.
//   - operation.go: the persisted record of an operation and what it has
//     left (Remaining).
//   - record.go: the record's versions: EncodeOperation, and
//     DecodeOperation, the one reader of every older shape.
//   - progress.go: how far an operation has come, for someone watching it.
//   - growth.go: the write rate the ETA's catch-up counts.
//
// It is pure like the rest of the engine: Kafka, the scaling platform, the
// metrics source, the store and the clock are ports that internal/kafka,
// internal/platform and internal/metrics implement.
package executor
