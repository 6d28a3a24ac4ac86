package io.kafkascale.streamsapp;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small, real Kafka Streams application for kafkascale's expansion tests.
 *
 * <pre>
 * orders (key customer "h3-c17", value "product=h5-p2;amount=12")
 *   leftJoin customers (KTable, key customer, store customers-store)
 *   -&gt; enriched
 *   -&gt; selectKey(product) -&gt; repartition "byproduct" (home partitioner)
 *   -&gt; groupByKey -&gt; count (store counts-store) -&gt; counts (key product, value long)
 * orders
 *   -&gt; map(key shard "s0".."s2") -&gt; repartition "by-shard", 3 partitions
 *   -&gt; groupByKey -&gt; count (store per-shard)
 * </pre>
 *
 * Every sink and the "byproduct" repartition step use {@link HomePartitioner};
 * the input producer partitions the same way. "byproduct" leaves its
 * partition count to Streams, so it follows the sources. "by-shard" fixes its
 * count with {@code withNumberOfPartitions(SHARDS)}, as many real apps do:
 * its repartition topic and the per-shard changelog keep 3 partitions
 * whatever the sources have, and growing them kills the app.
 *
 * <p>With {@code --topology totals}, a second app that shares the orders
 * topic with the first ({@code --orders-topic}) and aggregates on its own:
 *
 * <pre>
 * orders (shared)
 *   leftJoin refunds (KTable, key customer, store refunds-store)
 *   -&gt; selectKey(product) -&gt; repartition "byproduct" (home partitioner)
 *   -&gt; groupByKey -&gt; aggregate (store totals-store: orders per product)
 *   -&gt; totals (key product, value long)
 * </pre>
 *
 * Its refunds source is co-partitioned with orders by the join, so the two
 * must grow together, with its three internal topics.
 *
 * <p>Log lines that tests look for start with "KSAPP ".
 */
public final class App {
    /** The partition count the "by-shard" repartition fixes. */
    static final int SHARDS = 3;

    static final Logger LOG = LoggerFactory.getLogger("io.kafkascale.streamsapp");

    public static void main(final String[] args) throws Exception {
        final Options o;
        try {
            o = Options.parse(args);
        } catch (final IllegalArgumentException e) {
            System.err.println("streams-app: " + e.getMessage());
            System.err.println(Options.USAGE);
            System.exit(2);
            return;
        }
        final String ordersTopic = o.ordersTopic != null ? o.ordersTopic : o.topicPrefix + "orders";
        final Topology topology = "totals".equals(o.topology)
            ? totalsTopology(o.topicPrefix, ordersTopic, o.partitionerMode)
            : topology(o.topicPrefix, ordersTopic, o.partitionerMode);
        LOG.info("KSAPP TOPOLOGY\n{}", topology.describe());
        final Properties props = o.streamsProperties();
        LOG.info("KSAPP CONFIG {}", props);

        final Health health = new Health();
        final KafkaStreams streams = new KafkaStreams(topology, props);
        health.attach(streams);
        streams.setStateListener((to, from) -> {
            LOG.info("KSAPP STATE {} -> {}", from, to);
            health.onChange(to, from);
        });
        streams.setUncaughtExceptionHandler(e -> {
            LOG.error("KSAPP UNCAUGHT in {}: {}", Thread.currentThread().getName(), e.toString(), e);
            health.onUncaught(e);
            return o.onError;
        });

        final CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("KSAPP CLOSING leaveGroup={}", o.leaveGroupOnClose);
            final CloseOptions close = CloseOptions.groupMembershipOperation(o.leaveGroupOnClose
                    ? CloseOptions.GroupMembershipOperation.LEAVE_GROUP
                    : CloseOptions.GroupMembershipOperation.DEFAULT)
                .withTimeout(Duration.ofMillis(o.closeTimeoutMs));
            final boolean clean = streams.close(close);
            health.stop();
            LOG.info("KSAPP CLOSED clean={}", clean);
            closed.countDown();
        }, "ksapp-shutdown"));

        health.serve(o.healthPort, o.healthPortFile);
        if (o.waitForStart) {
            health.awaitStart();
        } else {
            health.releaseStart();
        }
        streams.start();
        // The process lives until SIGTERM even after an ERROR, so that a test
        // can still read /health and the log.
        closed.await();
    }

    static Topology topology(final String prefix, final String ordersTopic, final HomePartitioner.Mode mode) {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> customers = b.table(prefix + "customers",
            Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("customers-store")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        final KStream<String, String> orders = b.stream(ordersTopic, Consumed.with(Serdes.String(), Serdes.String()));

        final KStream<String, String> enriched = orders.leftJoin(customers,
            (order, customer) -> order + ";customer=" + (customer == null ? "-" : customer),
            Joined.with(Serdes.String(), Serdes.String(), Serdes.String()));
        enriched.to(prefix + "enriched",
            Produced.with(Serdes.String(), Serdes.String()).withStreamPartitioner(new HomePartitioner<>(mode)));

        enriched
            .selectKey((customer, order) -> field(order, "product"))
            .repartition(Repartitioned.<String, String>as("byproduct")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
                .withStreamPartitioner(new HomePartitioner<>(mode)))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts-store")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(prefix + "counts",
                Produced.with(Serdes.String(), Serdes.Long()).withStreamPartitioner(new HomePartitioner<>(mode)));

        orders
            .map((customer, order) -> KeyValue.pair("s" + Math.floorMod(customer.hashCode(), SHARDS), order))
            .repartition(Repartitioned.<String, String>as("by-shard")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
                .withNumberOfPartitions(SHARDS))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("per-shard")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        return b.build();
    }

    /** The second app: the shared orders joined with its own refunds table, aggregated per product. */
    static Topology totalsTopology(final String prefix, final String ordersTopic, final HomePartitioner.Mode mode) {
        final StreamsBuilder b = new StreamsBuilder();
        final KTable<String, String> refunds = b.table(prefix + "refunds",
            Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("refunds-store")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        b.stream(ordersTopic, Consumed.with(Serdes.String(), Serdes.String()))
            .leftJoin(refunds, (order, refund) -> order + ";refund=" + (refund == null ? "-" : refund),
                Joined.with(Serdes.String(), Serdes.String(), Serdes.String()))
            .selectKey((customer, order) -> field(order, "product"))
            .repartition(Repartitioned.<String, String>as("byproduct")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
                .withStreamPartitioner(new HomePartitioner<>(mode)))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
            .aggregate(() -> 0L, (product, order, total) -> total + 1,
                Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("totals-store")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .to(prefix + "totals",
                Produced.with(Serdes.String(), Serdes.Long()).withStreamPartitioner(new HomePartitioner<>(mode)));
        return b.build();
    }

    /** Returns the value of name in "a=1;b=2", or throws: an order without a product is a bug in the producer. */
    static String field(final String value, final String name) {
        for (final String kv : value.split(";")) {
            final int eq = kv.indexOf('=');
            if (eq > 0 && kv.substring(0, eq).equals(name)) {
                return kv.substring(eq + 1);
            }
        }
        throw new IllegalArgumentException("record value \"" + value + "\" has no " + name + "=");
    }

    /** Command-line options. Any Streams or client property can be added with --config key=value. */
    static final class Options {
        static final String USAGE = String.join("\n",
            "usage: java -jar streams-app.jar --bootstrap HOST:PORT[,..] --application-id ID [options]",
            "  --group-protocol classic|streams   rebalance protocol (default: the client's default)",
            "  --metadata-max-age-ms N            metadata.max.age.ms of every client (default: Kafka's)",
            "  --state-dir DIR                    state.dir (required)",
            "  --health-port N                    health port on 127.0.0.1 (default 0: any)",
            "  --health-port-file FILE            where to write the bound health port",
            "  --topology shop|totals             which app to run (default shop; see the class comment)",
            "  --topic-prefix P                   prefix of orders, customers, enriched, counts (totals: refunds, totals)",
            "  --orders-topic T                   read orders from T instead (e.g. another app's enriched sink)",
            "  --partitioner producer|strict      see HomePartitioner (default producer)",
            "  --on-error shutdown_client|replace_thread|shutdown_application (default shutdown_client)",
            "  --leave-group-on-close true|false  (default true)",
            "  --close-timeout-ms N               (default 30000)",
            "  --wait-for-start true|false        start Streams only on POST /start (default false)",
            "  --config key=value                 any other property; repeatable");

        String bootstrap;
        String applicationId;
        String groupProtocol;
        String metadataMaxAgeMs;
        String stateDir;
        int healthPort;
        Path healthPortFile;
        String topicPrefix = "";
        String topology = "shop";
        String ordersTopic;
        HomePartitioner.Mode partitionerMode = HomePartitioner.Mode.PRODUCER;
        StreamThreadExceptionResponse onError = StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        boolean leaveGroupOnClose = true;
        long closeTimeoutMs = 30_000;
        boolean waitForStart;
        final Map<String, String> extra = new LinkedHashMap<>();

        static Options parse(final String[] args) {
            final Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                final String flag = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                final String v = args[++i];
                switch (flag) {
                    case "--bootstrap" -> o.bootstrap = v;
                    case "--application-id" -> o.applicationId = v;
                    case "--group-protocol" -> o.groupProtocol = oneOf(flag, v, "classic", "streams");
                    case "--metadata-max-age-ms" -> o.metadataMaxAgeMs = Long.toString(Long.parseLong(v));
                    case "--state-dir" -> o.stateDir = v;
                    case "--health-port" -> o.healthPort = Integer.parseInt(v);
                    case "--health-port-file" -> o.healthPortFile = Path.of(v);
                    case "--topic-prefix" -> o.topicPrefix = v;
                    case "--topology" -> o.topology = oneOf(flag, v, "shop", "totals");
                    case "--orders-topic" -> o.ordersTopic = v;
                    case "--partitioner" -> o.partitionerMode =
                        HomePartitioner.Mode.valueOf(oneOf(flag, v, "strict", "producer").toUpperCase());
                    case "--on-error" -> o.onError = StreamThreadExceptionResponse.valueOf(
                        oneOf(flag, v, "shutdown_client", "replace_thread", "shutdown_application").toUpperCase());
                    case "--leave-group-on-close" -> o.leaveGroupOnClose = Boolean.parseBoolean(oneOf(flag, v, "true", "false"));
                    case "--close-timeout-ms" -> o.closeTimeoutMs = Long.parseLong(v);
                    case "--wait-for-start" -> o.waitForStart = Boolean.parseBoolean(oneOf(flag, v, "true", "false"));
                    case "--config" -> {
                        final int eq = v.indexOf('=');
                        if (eq <= 0) {
                            throw new IllegalArgumentException("--config wants key=value, got \"" + v + "\"");
                        }
                        o.extra.put(v.substring(0, eq), v.substring(eq + 1));
                    }
                    default -> throw new IllegalArgumentException("unknown flag " + flag);
                }
            }
            if (o.bootstrap == null || o.applicationId == null || o.stateDir == null) {
                throw new IllegalArgumentException("--bootstrap, --application-id and --state-dir are required");
            }
            return o;
        }

        private static String oneOf(final String flag, final String v, final String... allowed) {
            for (final String a : allowed) {
                if (a.equals(v)) {
                    return v;
                }
            }
            throw new IllegalArgumentException(flag + " must be one of " + String.join(", ", allowed) + ", got \"" + v + "\"");
        }

        Properties streamsProperties() {
            final Properties p = new Properties();
            p.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
            p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
            // Exactly once makes every count exact, so a test can compare
            // each product's count with the orders it produced.
            p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
            p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
            p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
            // A customer is produced before its first order; waiting a little
            // for the customers partition keeps the join from missing it.
            p.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, "500");
            if (groupProtocol != null) {
                p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, groupProtocol);
            }
            if (metadataMaxAgeMs != null) {
                // Unprefixed, so that the consumer, the producer and the admin client all use it.
                p.put("metadata.max.age.ms", metadataMaxAgeMs);
            }
            p.putAll(extra);
            return p;
        }
    }
}
