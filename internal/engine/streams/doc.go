// Package streams plans the growth of Kafka Streams applications' topics:
// which topics an app reads, writes and keeps for itself (App, Topic,
// Subtopology), which internal topics keep their own count
// (FixedInternalTopics), whether a topic may grow on its own
// (CheckTopicGrowth), and the ordered steps that grow an app, and the apps
// sharing its sources, without stopping them (PlanExpansion).
//
// It is pure like the reassignment planner beside it, and shares nothing
// with it but the engine's InputError and the rule that a topic never
// shrinks. A refused expansion is data: each Problem says its kind, the
// setting it is about (a Field) and the apps, topics and counts it names,
// so that a caller words it in its own terms.
package streams
