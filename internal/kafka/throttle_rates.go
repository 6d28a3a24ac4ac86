package kafka

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
)

// SetBrokerThrottle sets both replication rates on each broker. The rates
// accept only SET and DELETE, and a broker takes its own dynamic config, so
// every broker named must be up.
func (c *Client) SetBrokerThrottle(ctx context.Context, brokers []int32, bytesPerSec int64) error {
	v := strconv.FormatInt(bytesPerSec, 10)
	// No read-back here: nothing reads the rates before the brokers apply
	// them, and a loaded broker can take seconds to show a new dynamic
	// config, which would hold up every apply for nothing.
	return c.alterBrokers(ctx, "setting the replication throttle", brokers, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: ConfigLeaderThrottleRate, Value: &v},
		{Op: kadm.SetConfig, Name: ConfigFollowerThrottleRate, Value: &v},
	})
}

// ClearBrokerThrottle deletes both replication rates from each broker.
func (c *Client) ClearBrokerThrottle(ctx context.Context, brokers []int32) error {
	if err := c.alterBrokers(ctx, "removing the replication throttle", brokers, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: ConfigLeaderThrottleRate},
		{Op: kadm.DeleteConfig, Name: ConfigFollowerThrottleRate},
	}); err != nil {
		return err
	}
	return c.awaitBrokerRates(ctx, brokers, 0)
}

func (c *Client) awaitBrokerRates(ctx context.Context, brokers []int32, rate int64) error {
	return c.await(ctx, fmt.Sprintf("brokers %v to show a replication throttle of %d B/s", brokers, rate), func() (bool, error) {
		rates, err := c.BrokerThrottles(ctx, brokers)
		if err != nil {
			return false, err
		}
		for _, b := range brokers {
			if rates[b] != [2]int64{rate, rate} {
				return false, nil
			}
		}
		return true, nil
	})
}

// BrokerThrottles returns each broker's current rates; a missing rate is 0.
func (c *Client) BrokerThrottles(ctx context.Context, brokers []int32) (map[int32][2]int64, error) {
	dyn, err := c.dynamicBrokerConfigs(ctx, "reading the replication throttle", brokers)
	out := make(map[int32][2]int64, len(dyn))
	for id, cfgs := range dyn {
		leader, _ := strconv.ParseInt(cfgs[ConfigLeaderThrottleRate], 10, 64)
		follower, _ := strconv.ParseInt(cfgs[ConfigFollowerThrottleRate], 10, 64)
		out[id] = [2]int64{leader, follower}
	}
	return out, err
}
