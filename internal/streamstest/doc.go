// Package streamstest builds, runs and checks the real Kafka Streams
// application in test/streams-app, for tests that expand a live Streams
// app's topics.
//
// The types a reader needs are few:
//   - [Build] packages the app once with Maven and returns its jar.
//   - [StartApp] runs one instance of the app (one JVM) for a test; [App]
//     reads its health endpoint and its log.
//   - [Workload] produces statically partitioned orders and customers and
//     counts the orders acknowledged per product; [Observer] reads the app's
//     output and checks counts and placement.
//   - [Expand] grows the app's topics in the order a live app survives:
//     sinks first, then the sources and internal topics in one request;
//     [ClassicGroupStatus] and [StreamsGroupStatus] tell when the group is
//     stable on the new count.
//
// Every key names its home partition ("h5-p2" lives in partition 5 of every
// topic it passes through), so a key never moves, and keys created after an
// expansion use the new partitions.
package streamstest
