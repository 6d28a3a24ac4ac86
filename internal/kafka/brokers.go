package kafka

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Registration is a broker registered with the KRaft controller.
type Registration struct {
	ID     int32
	Rack   string
	Fenced bool
}

// Registrations lists every registered broker, fenced ones included
// (DescribeCluster v2, KIP-1073), sorted by id. Metadata would hide the
// fenced ones, which are exactly those a scale-in must unregister.
func (c *Client) Registrations(ctx context.Context) ([]Registration, error) {
	var out []Registration
	err := c.readAny(ctx, "listing registered brokers", func(ctx context.Context) error {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers = true
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		out = out[:0]
		for _, b := range resp.Brokers {
			rack := ""
			if b.Rack != nil {
				rack = *b.Rack
			}
			out = append(out, Registration{ID: b.NodeID, Rack: rack, Fenced: b.IsFenced})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return nil
	})
	return out, err
}

// UnregisterBroker removes a stopped broker's registration. Kafka keeps a
// fenced registration forever otherwise, and it can block feature upgrades.
// Unregistering a broker that is still running fences it, so callers must
// stop it first. A broker that is not registered is not an error.
func (c *Client) UnregisterBroker(ctx context.Context, id int32) error {
	return c.withTimeout(ctx, fmt.Sprintf("unregistering broker %d", id), func(ctx context.Context) error {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		if err == kerr.BrokerIDNotRegistered {
			return nil
		}
		if err != nil && resp.ErrorMessage != nil {
			return fmt.Errorf("%w: %s", err, *resp.ErrorMessage)
		}
		return err
	})
}
