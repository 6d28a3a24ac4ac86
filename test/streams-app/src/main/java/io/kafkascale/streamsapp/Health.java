package io.kafkascale.streamsapp;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;

/**
 * Records what a test must be able to ask about the app: its state, every
 * state transition, whether it was ever in ERROR or PENDING_ERROR, every
 * uncaught exception, and its active tasks. GET /health on 127.0.0.1 answers
 * with all of it as JSON.
 */
final class Health {
    private record Transition(Instant at, KafkaStreams.State from, KafkaStreams.State to) {
    }

    private record Failure(Instant at, String thread, String trace) {
    }

    private final List<Transition> transitions = new ArrayList<>();
    private final List<Failure> failures = new ArrayList<>();
    private KafkaStreams.State state = KafkaStreams.State.CREATED;
    private boolean everError;
    private volatile KafkaStreams streams;
    private HttpServer server;
    private final CountDownLatch startGate = new CountDownLatch(1);

    synchronized void onChange(final KafkaStreams.State to, final KafkaStreams.State from) {
        transitions.add(new Transition(Instant.now(), from, to));
        state = to;
        if (to == KafkaStreams.State.ERROR || to == KafkaStreams.State.PENDING_ERROR) {
            everError = true;
        }
    }

    synchronized void onUncaught(final Throwable e) {
        final StringWriter w = new StringWriter();
        e.printStackTrace(new PrintWriter(w));
        failures.add(new Failure(Instant.now(), Thread.currentThread().getName(), w.toString()));
    }

    void attach(final KafkaStreams streams) {
        this.streams = streams;
    }

    /** Serves GET /health on 127.0.0.1:port (0: any free port) and writes the bound port to portFile. */
    void serve(final int port, final Path portFile) throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
        server.createContext("/health", this::handle);
        server.createContext("/start", this::handleStart);
        server.start();
        final int bound = server.getAddress().getPort();
        App.LOG.info("KSAPP HEALTH listening on 127.0.0.1:{}", bound);
        if (portFile != null) {
            // Written then renamed, so that a reader never sees a partial number.
            final Path tmp = portFile.resolveSibling(portFile.getFileName() + ".tmp");
            Files.writeString(tmp, Integer.toString(bound));
            Files.move(tmp, portFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    void stop() {
        if (server != null) {
            server.stop(0);
        }
    }

    /** Blocks until POST /start. A test uses it to time the moment a warm JVM joins the group. */
    void awaitStart() throws InterruptedException {
        App.LOG.info("KSAPP WAITING for POST /start");
        startGate.await();
    }

    void releaseStart() {
        startGate.countDown();
    }

    private void handleStart(final HttpExchange ex) throws IOException {
        if (!"POST".equals(ex.getRequestMethod())) {
            reply(ex, 405, "{\"error\":\"POST only\"}");
            return;
        }
        App.LOG.info("KSAPP START requested");
        startGate.countDown();
        reply(ex, 200, "{}");
    }

    private static void reply(final HttpExchange ex, final int status, final String json) throws IOException {
        final byte[] body = json.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    private void handle(final HttpExchange ex) throws IOException {
        if (!"GET".equals(ex.getRequestMethod())) {
            reply(ex, 405, "{\"error\":\"GET only\"}");
            return;
        }
        reply(ex, 200, json());
    }

    private String json() {
        final Set<String> tasks = new TreeSet<>();
        final Set<String> partitions = new TreeSet<>();
        final KafkaStreams s = streams;
        if (s != null) {
            try {
                for (final ThreadMetadata t : s.metadataForLocalThreads()) {
                    for (final TaskMetadata task : t.activeTasks()) {
                        tasks.add(task.taskId().toString());
                        for (final TopicPartition tp : task.topicPartitions()) {
                            partitions.add(tp.topic() + "-" + tp.partition());
                        }
                    }
                }
            } catch (final RuntimeException e) {
                // The metadata is unavailable while the client closes; the state says why.
            }
        }
        final StringBuilder b = new StringBuilder(512);
        synchronized (this) {
            b.append("{\"state\":").append(str(state.name()));
            b.append(",\"started\":").append(startGate.getCount() == 0);
            b.append(",\"everError\":").append(everError);
            b.append(",\"transitions\":[");
            for (int i = 0; i < transitions.size(); i++) {
                final Transition t = transitions.get(i);
                if (i > 0) {
                    b.append(',');
                }
                b.append("{\"at\":").append(str(t.at().toString()))
                    .append(",\"from\":").append(str(t.from().name()))
                    .append(",\"to\":").append(str(t.to().name())).append('}');
            }
            b.append("],\"uncaught\":[");
            for (int i = 0; i < failures.size(); i++) {
                final Failure f = failures.get(i);
                if (i > 0) {
                    b.append(',');
                }
                b.append("{\"at\":").append(str(f.at().toString()))
                    .append(",\"thread\":").append(str(f.thread()))
                    .append(",\"trace\":").append(str(f.trace())).append('}');
            }
            b.append(']');
        }
        b.append(",\"activeTasks\":").append(strs(tasks));
        b.append(",\"activePartitions\":").append(strs(partitions));
        return b.append('}').toString();
    }

    private static String strs(final Set<String> values) {
        final StringBuilder b = new StringBuilder("[");
        for (final String v : values) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append(str(v));
        }
        return b.append(']').toString();
    }

    static String str(final String s) {
        final StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }
}
