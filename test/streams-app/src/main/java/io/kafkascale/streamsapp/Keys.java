package io.kafkascale.streamsapp;

/**
 * Keys carry their home partition: "h3-c17" always lives in partition 3 of
 * every topic it passes through. This is static partitioning, the premise of
 * a safe partition expansion: a key never moves, and keys created after an
 * expansion are given homes in the new partitions.
 */
final class Keys {
    private Keys() {
    }

    /** Returns the home partition that key names, or throws if it names none. */
    static int home(final String key) {
        if (key == null || key.length() < 3 || key.charAt(0) != 'h') {
            throw new IllegalArgumentException("key " + quote(key) + " does not start with h<home>-");
        }
        final int dash = key.indexOf('-');
        if (dash < 2) {
            throw new IllegalArgumentException("key " + quote(key) + " does not start with h<home>-");
        }
        try {
            final int home = Integer.parseInt(key.substring(1, dash));
            if (home < 0) {
                throw new IllegalArgumentException("key " + quote(key) + " names a negative home partition");
            }
            return home;
        } catch (final NumberFormatException e) {
            throw new IllegalArgumentException("key " + quote(key) + " does not start with h<home>-", e);
        }
    }

    private static String quote(final String s) {
        return s == null ? "null" : "\"" + s + "\"";
    }
}
