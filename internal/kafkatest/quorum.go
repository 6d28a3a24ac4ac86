package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ActiveController asks the metadata quorum, through the brokers, for its
// leader: the active controller's node id. Kafka's Metadata response names a
// random broker as controller under KRaft, so it cannot say.
func (c *Cluster) ActiveController(ctx context.Context) (int32, error) {
	return activeController(ctx, c.client)
}

func activeController(ctx context.Context, cl *kgo.Client) (int32, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, fmt.Errorf("DescribeQuorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, fmt.Errorf("DescribeQuorum: %w", err)
	}
	// The metadata log has one partition.
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return -1, errors.New("DescribeQuorum returned no partition for __cluster_metadata")
	}
	mp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(mp.ErrorCode); err != nil {
		return -1, fmt.Errorf("DescribeQuorum __cluster_metadata-%d: %w", mp.Partition, err)
	}
	if mp.LeaderID < 0 {
		return -1, errors.New("DescribeQuorum: the metadata quorum has no leader")
	}
	return mp.LeaderID, nil
}

// KillActiveController SIGKILLs the controller that leads the metadata
// quorum, waits for its JVM to exit, and returns its id. It refuses when the
// cluster has a single controller, which nothing could replace. The killed
// controller is not restarted; the others elect a new leader by themselves
// (see WaitNewActiveController).
func (c *Cluster) KillActiveController(ctx context.Context) (int32, error) {
	if len(c.controllers) < 3 {
		return -1, errors.New("kafkatest: refusing to kill the only controller; start the cluster with Options.Controllers = 3")
	}
	id, err := c.ActiveController(ctx)
	if err != nil {
		return -1, err
	}
	i := slices.IndexFunc(c.controllers, func(n *node) bool { return n.id == id })
	if i < 0 {
		return -1, fmt.Errorf("kafkatest: the quorum leader %d is none of the controllers %v", id, c.ControllerIDs())
	}
	kctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.signal(kctx, c.controllers[i], syscall.SIGKILL); err != nil {
		return id, err
	}
	c.opts.Logf("kafkatest: active controller %d killed", id)
	return id, nil
}

// WaitNewActiveController waits until the quorum has a leader other than
// old and returns it.
func (c *Cluster) WaitNewActiveController(ctx context.Context, old int32) (int32, error) {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var last error
	for {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		id, err := c.ActiveController(rctx)
		rcancel()
		if err == nil && id != old {
			return id, nil
		}
		if err == nil {
			err = fmt.Errorf("controller %d still leads", old)
		}
		last = err
		if err := sleepCtx(ctx, pollInterval); err != nil {
			return -1, fmt.Errorf("kafkatest: no new active controller after %d was killed: %w (last: %v)", old, err, last)
		}
	}
}
