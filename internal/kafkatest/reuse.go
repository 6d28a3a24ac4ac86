package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// AddBrokerWithID starts a broker with an empty disk under an id no
// registered broker holds, in rack, and returns once it is unfenced: what a
// platform that reuses ids (a Kubernetes StatefulSet pod coming back) does.
func (c *Cluster) AddBrokerWithID(ctx context.Context, id int32, rack string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("kafkatest: cluster is stopped")
	}
	if _, ok := c.brokers[id]; ok {
		c.mu.Unlock()
		return fmt.Errorf("kafkatest: broker %d is registered here already; unregister it first", id)
	}
	n := c.brokerNodeLocked(id, port, rack)
	c.mu.Unlock()
	if err := c.launch(ctx, n); err != nil {
		_ = c.signal(context.Background(), n, syscall.SIGKILL)
		return fmt.Errorf("adding broker %d again in rack %s: %w", id, rack, err)
	}
	c.opts.Logf("kafkatest: broker %d (rack %s, %s) added under a reused id", id, rack, n.addr())
	return nil
}

// RestartBrokerWithEmptyDisk stops broker id if it runs, deletes its data
// and starts it again under the same id, rack and port with an empty disk,
// returning once it is unfenced: a StatefulSet pod that comes back on a new
// volume. Kafka re-replicates its partitions onto it by itself.
func (c *Cluster) RestartBrokerWithEmptyDisk(ctx context.Context, id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	if err := c.signal(ctx, n, syscall.SIGTERM); err != nil {
		return err
	}
	// With Options.DiskBytes the data dir is a mount: it is unmounted
	// first, and launch mounts a fresh, empty one.
	if err := unmountUnder(n.dir); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(n.dir, "data")); err != nil {
		return fmt.Errorf("deleting the data of broker %d: %w", id, err)
	}
	if err := c.launch(ctx, n); err != nil {
		_ = c.signal(context.Background(), n, syscall.SIGKILL)
		return fmt.Errorf("restarting broker %d with an empty disk: %w", id, err)
	}
	c.opts.Logf("kafkatest: broker %d (rack %s, %s) back with an empty disk", id, n.rack, n.addr())
	return nil
}
