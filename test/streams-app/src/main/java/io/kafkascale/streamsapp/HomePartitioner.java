package io.kafkascale.streamsapp;

import java.util.Optional;
import java.util.Set;

import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.StreamPartitioner;

/**
 * Sends every record to its key's home partition (see {@link Keys}).
 *
 * <p>numPartitions is the count in the producer's cached metadata, which may
 * lag a partition expansion by up to metadata.max.age.ms. The two modes differ
 * only in what they do when the home is beyond that count:
 * <ul>
 *   <li>STRICT throws at once. The key cannot silently move, but a stale
 *       cache alone kills the stream thread.</li>
 *   <li>PRODUCER hands the home to the producer, which refreshes its
 *       metadata until the partition exists, and fails the send after
 *       max.block.ms if it never does. The key cannot silently move
 *       either.</li>
 * </ul>
 */
final class HomePartitioner<V> implements StreamPartitioner<String, V> {
    enum Mode { STRICT, PRODUCER }

    private final Mode mode;

    HomePartitioner(final Mode mode) {
        this.mode = mode;
    }

    @Override
    public Optional<Set<Integer>> partitions(final String topic, final String key, final V value, final int numPartitions) {
        final int home = Keys.home(key);
        if (home >= numPartitions) {
            App.LOG.warn("KSAPP PARTITIONER key=" + key + " home=" + home + " topic=" + topic
                + " cachedPartitions=" + numPartitions + " mode=" + mode);
            if (mode == Mode.STRICT) {
                throw new StreamsException("key " + key + " has home partition " + home + " but topic " + topic
                    + " has only " + numPartitions + " partitions in this client's metadata; refusing to move the key");
            }
        }
        return Optional.of(Set.of(home));
    }
}
