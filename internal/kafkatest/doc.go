// Package kafkatest runs a real Apache Kafka cluster (KRaft mode, one
// controller, or a quorum of three with Options.Controllers, and N brokers,
// each a local JVM on 127.0.0.1) for tests, benchmarks and the local demo
// cluster.
//
// The types a reader needs are few:
//   - [EnsureKafka] resolves the pinned Kafka release into a local cache.
//   - [Start] and [StartT] form a cluster and return a [Cluster] once every
//     broker is registered and unfenced.
//   - [Cluster] adds, stops, kills, restarts and unregisters brokers, and
//     kills the active controller of a quorum. With Options.DiskBytes each
//     broker's log.dirs is its own tmpfs of that size (root only), and
//     [Cluster.DiskUse] reads how full each one is.
//   - With Options.Tiered the brokers tier topics that ask for it
//     (remote.storage.enable) to a remote storage kept under the cluster's
//     directory; [ListTieredOffsets], [LocalLogSizes] and [Cluster.RemoteLogs]
//     read what a tiered partition holds where, against which tests check
//     what the planner estimates a new replica copies (internal/kafka).
//   - [NewScalingAPI] serves the HTTP scaling API a platform implements
//     (docs/scaling-api.openapi.yaml) on top of a [Cluster].
//   - [Main] guards a TestMain that shares one cluster across tests.
//
// No JVM, mount or temporary directory outlives the process that started
// them: every JVM gets the kernel's parent-death signal, a small reaper
// process unmounts the brokers' disks and removes the cluster's directory
// when its owner dies however it dies, and every Start sweeps what a
// previous, killed owner left behind.
//
// The package is Linux-only: it relies on the parent-death signal and /proc.
// It needs java (17+) on PATH or in $JAVA_HOME, and mvn for the first fetch
// (and the first build of the remote storage fixture, test/remote-storage).
package kafkatest
