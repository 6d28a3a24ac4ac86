package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// Brokers lists the registered brokers, running or not, by id. An
// unregistered broker is no longer listed.
func (c *Cluster) Brokers() []Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Broker
	for _, n := range c.sortedBrokersLocked() {
		b := Broker{ID: n.id, Rack: n.rack, Addr: n.addr(), Running: n.proc != nil}
		switch n.state {
		case nodeStarting:
			b.State = platform.BrokerStarting
		case nodeRunning:
			b.State = platform.BrokerRunning
		case nodeStopping:
			b.State = platform.BrokerStopping
		default:
			b.State = platform.BrokerStopped
		}
		out = append(out, b)
	}
	return out
}

// AddBroker starts a broker with a new id in rack (empty: the rack with the
// fewest registered brokers, ties by the order of Options.Racks) and returns
// its id once it is unfenced.
func (c *Cluster) AddBroker(ctx context.Context, rack string) (int32, error) {
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return 0, errors.New("kafkatest: cluster is stopped")
	}
	if rack == "" {
		rack = c.leastUsedRackLocked()
	}
	n := c.newBrokerLocked(port, rack)
	c.mu.Unlock()
	if err := c.launch(ctx, n); err != nil {
		_ = c.signal(context.Background(), n, syscall.SIGKILL)
		return n.id, fmt.Errorf("adding broker %d in rack %s: %w", n.id, rack, err)
	}
	c.opts.Logf("kafkatest: broker %d (rack %s, %s) added", n.id, rack, n.addr())
	return n.id, nil
}

func (c *Cluster) leastUsedRackLocked() string {
	count := map[string]int{}
	for _, n := range c.brokers {
		count[n.rack]++
	}
	best := c.opts.Racks[0]
	for _, r := range c.opts.Racks {
		if count[r] < count[best] {
			best = r
		}
	}
	return best
}

func (c *Cluster) broker(id int32) (*node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.brokers[id]
	if !ok {
		return nil, fmt.Errorf("kafkatest: cluster has no broker %d (brokers: %v)", id, c.idsLocked())
	}
	return n, nil
}

func (c *Cluster) idsLocked() []int32 {
	var ids []int32
	for _, n := range c.sortedBrokersLocked() {
		ids = append(ids, n.id)
	}
	return ids
}

// StopBroker shuts a broker down in order (SIGTERM: it hands its partition
// leaderships over first) and waits for its JVM to exit. If ctx ends first
// the broker is killed and the error says so. Stopping a stopped broker does
// nothing.
func (c *Cluster) StopBroker(ctx context.Context, id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	return c.signal(ctx, n, syscall.SIGTERM)
}

// KillBroker SIGKILLs a broker and waits for its JVM to exit. The controller
// fences it once its session times out (broker.session.timeout.ms).
func (c *Cluster) KillBroker(id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.signal(ctx, n, syscall.SIGKILL)
}

// RestartBroker stops the broker if it runs, starts it again with the same
// id, rack, port and data, and returns once it is unfenced.
//
// After a kill the controller refuses the new registration until the old
// one's session times out (broker.session.timeout.ms, 9 s by default); the
// broker retries by itself, so the restart takes at least that long.
func (c *Cluster) RestartBroker(ctx context.Context, id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	if err := c.signal(ctx, n, syscall.SIGTERM); err != nil {
		return err
	}
	if err := c.prepare(n); err != nil {
		return err
	}
	if err := c.startAndWait(ctx, n); err != nil {
		return fmt.Errorf("restarting broker %d: %w", id, err)
	}
	return nil
}

// UnregisterBroker removes a stopped broker's registration from the
// controller (a fenced registration never expires by itself) and deletes its
// data. It refuses while the broker's JVM runs, since a running broker would
// register again at once. It returns once DescribeCluster, fenced brokers
// included, no longer lists the broker.
func (c *Cluster) UnregisterBroker(ctx context.Context, id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	proc := n.proc
	c.mu.Unlock()
	if proc != nil {
		return fmt.Errorf("kafkatest: refusing to unregister broker %d while its JVM runs (pid %d); stop it first", id, proc.Pid)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	c.reseed()
	if err := unregisterBroker(ctx, c.client, id); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.brokers, id)
	c.mu.Unlock()
	if err := c.waitClusterView(ctx, nil, []int32{id}); err != nil {
		return err
	}
	if err := unmountUnder(n.dir); err != nil {
		return err
	}
	if err := os.RemoveAll(n.dir); err != nil {
		return fmt.Errorf("removing the data of unregistered broker %d: %w", id, err)
	}
	c.opts.Logf("kafkatest: broker %d unregistered", id)
	return nil
}

// reseed makes the shared client's seed brokers the brokers running now.
// The client keeps the seeds it was made with forever, and it may look a
// controller up through any of them with only three tries. Once scale-ins
// and replacements have stopped the first brokers for good, most of those
// tries dial a closed port, and an admin request such as UnregisterBroker
// fails with "connection refused" although live brokers are there to take
// it (soak seed 3, step 20).
func (c *Cluster) reseed() {
	_ = c.client.UpdateSeedBrokers(c.BootstrapServers()...) // only fails on a malformed host:port, and these are ours
}

// Scaler is a scaling platform made of the cluster itself: it stops the
// brokers asked to leave and starts new ones until the count is reached.
// Tests that drive the executor without the HTTP scaling API use it.
type Scaler struct{ C *Cluster }

// ScaleTo stops remove, then adds brokers until n are listed.
func (s Scaler) ScaleTo(ctx context.Context, n int, remove []int32) error {
	for _, id := range remove {
		if err := s.C.StopBroker(ctx, id); err != nil {
			return err
		}
	}
	for len(s.C.Brokers()) < n {
		if _, err := s.C.AddBroker(ctx, ""); err != nil {
			return err
		}
	}
	return nil
}
