package io.kafkascale.remotestorage;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentId;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * A {@link RemoteStorageManager} whose "object store" is a local directory
 * that every broker of a test cluster shares, so that a new leader reads what
 * an old one tiered, as with a real object store.
 *
 * <p>Layout, readable by the Go harness without Kafka's help:
 * {@code <dir>/<topic>/<partition>/<topic id>/<start offset>-<end offset>-<segment id>.<suffix>},
 * the offsets zero-padded to 20 digits. The topic id level keeps a deleted
 * and recreated topic's segments apart. The suffixes are Kafka's own file
 * names: .log, .index, .timeindex, .txnindex, .snapshot, and
 * .leader-epoch-checkpoint for the leader epoch cache.
 *
 * <p>Every file is written under a temporary name and moved into place, and a
 * failed copy removes whatever it wrote: Kafka retries a failed copy under a
 * new segment id, so nothing half-written may stay behind under the old one.
 */
public final class LocalDirRemoteStorageManager implements RemoteStorageManager {
    /** The broker passes rsm.config.dir as "dir" (it strips the rsm.config. prefix). */
    public static final String DIR_CONFIG = "dir";

    private static final String LOG = ".log";
    private static final String TMP = ".tmp";

    private volatile Path root;

    @Override
    public void configure(Map<String, ?> configs) {
        Object dir = configs.get(DIR_CONFIG);
        if (dir == null || dir.toString().isEmpty()) {
            throw new IllegalArgumentException("LocalDirRemoteStorageManager needs rsm.config." + DIR_CONFIG
                + " (the directory that holds the tiered segments); got configs " + configs.keySet());
        }
        Path p = Paths.get(dir.toString()).toAbsolutePath();
        try {
            Files.createDirectories(p);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot create the remote storage directory " + p, e);
        }
        root = p;
    }

    @Override
    public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(
            RemoteLogSegmentMetadata metadata, LogSegmentData data) throws RemoteStorageException {
        List<Path> written = new ArrayList<>();
        try {
            Path dir = partitionDir(metadata.remoteLogSegmentId().topicIdPartition());
            Files.createDirectories(dir);
            String base = baseName(metadata);
            copy(data.offsetIndex(), dir.resolve(base + suffix(IndexType.OFFSET)), written);
            copy(data.timeIndex(), dir.resolve(base + suffix(IndexType.TIMESTAMP)), written);
            copy(data.producerSnapshotIndex(), dir.resolve(base + suffix(IndexType.PRODUCER_SNAPSHOT)), written);
            // A segment without transactional records has no transaction
            // index; fetchIndex then answers RemoteResourceNotFoundException,
            // which the broker's index cache takes for an empty index.
            if (data.transactionIndex().isPresent()) {
                copy(data.transactionIndex().get(), dir.resolve(base + suffix(IndexType.TRANSACTION)), written);
            }
            write(data.leaderEpochIndex(), dir.resolve(base + suffix(IndexType.LEADER_EPOCH)), written);
            // The segment last: its presence says the rest is there.
            copy(data.logSegment(), dir.resolve(base + LOG), written);
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            for (Path p : written) {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // The copy fails anyway; the broker retries under a new id.
                }
            }
            throw new RemoteStorageException("copying segment " + metadata.remoteLogSegmentId()
                + " (offsets " + metadata.startOffset() + "-" + metadata.endOffset() + ") to " + root + ": " + e, e);
        }
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition)
            throws RemoteStorageException {
        return fetchLogSegment(metadata, startPosition, Integer.MAX_VALUE);
    }

    /** Reads the segment from startPosition to endPosition, both inclusive, as the interface documents. */
    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition, int endPosition)
            throws RemoteStorageException {
        if (startPosition < 0 || endPosition < startPosition) {
            throw new IllegalArgumentException("invalid positions " + startPosition + "-" + endPosition
                + " of remote segment " + metadata.remoteLogSegmentId());
        }
        Path file = segmentFile(metadata, LOG);
        try {
            SeekableByteChannel ch = Files.newByteChannel(file, StandardOpenOption.READ);
            try {
                long size = ch.size();
                long end = Math.min((long) endPosition, size - 1);
                ch.position(Math.min(startPosition, size));
                long length = Math.max(0, end - startPosition + 1);
                return new BoundedInputStream(Channels.newInputStream(ch), length);
            } catch (IOException | RuntimeException e) {
                ch.close();
                throw e;
            }
        } catch (NoSuchFileException e) {
            throw new RemoteResourceNotFoundException("remote segment " + metadata.remoteLogSegmentId()
                + " is not in " + file.getParent() + ": " + e.getMessage());
        } catch (IOException e) {
            throw new RemoteStorageException("reading remote segment " + file + ": " + e, e);
        }
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata metadata, IndexType indexType)
            throws RemoteStorageException {
        Path file = segmentFile(metadata, suffix(indexType));
        try {
            return Files.newInputStream(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new RemoteResourceNotFoundException("the " + indexType + " index of remote segment "
                + metadata.remoteLogSegmentId() + " is not in " + file.getParent());
        } catch (IOException e) {
            throw new RemoteStorageException("reading the " + indexType + " index " + file + ": " + e, e);
        }
    }

    /** Deletes every file of the segment; deleting a segment that is already gone succeeds, as the interface asks. */
    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata metadata) throws RemoteStorageException {
        Path dir = partitionDir(metadata.remoteLogSegmentId().topicIdPartition());
        String prefix = baseName(metadata);
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, prefix + ".*")) {
            for (Path p : files) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new RemoteStorageException("deleting remote segment " + metadata.remoteLogSegmentId()
                + " from " + dir + ": " + e, e);
        }
    }

    @Override
    public void close() {
        // Nothing is held open between calls.
    }

    private Path partitionDir(TopicIdPartition tp) {
        Path r = root;
        if (r == null) {
            throw new IllegalStateException("LocalDirRemoteStorageManager used before configure");
        }
        return r.resolve(tp.topic()).resolve(Integer.toString(tp.partition())).resolve(tp.topicId().toString());
    }

    private static String baseName(RemoteLogSegmentMetadata metadata) {
        RemoteLogSegmentId id = metadata.remoteLogSegmentId();
        return String.format("%020d-%020d-%s", metadata.startOffset(), metadata.endOffset(), id.id());
    }

    private Path segmentFile(RemoteLogSegmentMetadata metadata, String suffix) {
        return partitionDir(metadata.remoteLogSegmentId().topicIdPartition()).resolve(baseName(metadata) + suffix);
    }

    private static String suffix(IndexType type) {
        switch (type) {
            case OFFSET:
                return ".index";
            case TIMESTAMP:
                return ".timeindex";
            case PRODUCER_SNAPSHOT:
                return ".snapshot";
            case TRANSACTION:
                return ".txnindex";
            case LEADER_EPOCH:
                return ".leader-epoch-checkpoint";
            default:
                throw new IllegalArgumentException("unknown index type " + type);
        }
    }

    private static void copy(Path from, Path to, List<Path> written) throws IOException {
        Path tmp = to.resolveSibling(to.getFileName() + TMP);
        written.add(tmp);
        Files.copy(from, tmp, StandardCopyOption.REPLACE_EXISTING);
        Files.move(tmp, to, StandardCopyOption.ATOMIC_MOVE);
        written.add(to);
    }

    private static void write(ByteBuffer data, Path to, List<Path> written) throws IOException {
        Path tmp = to.resolveSibling(to.getFileName() + TMP);
        written.add(tmp);
        // A duplicate: the broker's buffer keeps its position.
        ByteBuffer b = data.duplicate();
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            while (b.hasRemaining()) {
                ch.write(b);
            }
        }
        Files.move(tmp, to, StandardCopyOption.ATOMIC_MOVE);
        written.add(to);
    }

    /** An InputStream that ends after length bytes and closes the file with it. */
    private static final class BoundedInputStream extends InputStream {
        private final InputStream in;
        private long left;

        BoundedInputStream(InputStream in, long length) {
            this.in = in;
            this.left = length;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) {
                return -1;
            }
            int b = in.read();
            if (b >= 0) {
                left--;
            }
            return b;
        }

        @Override
        public int read(byte[] buf, int off, int len) throws IOException {
            if (left <= 0) {
                return -1;
            }
            int n = in.read(buf, off, (int) Math.min(len, left));
            if (n > 0) {
                left -= n;
            }
            return n;
        }

        @Override
        public int available() throws IOException {
            return (int) Math.min(in.available(), left);
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
