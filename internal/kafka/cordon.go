package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// ConfigCordonedLogDirs is the per-broker dynamic config of KIP-1066 (Kafka
// 4.3+): the controller places no new replica on a log dir it lists, and
// "*" lists them all. Reassignments and existing replicas are not affected.
const ConfigCordonedLogDirs = "cordoned.log.dirs"

// CordonSupported reports whether the cluster knows cordoned.log.dirs: a
// broker that has it lists it among its own configs (as a default when
// unset). It asks the first unfenced broker; a cluster mid-upgrade is
// judged by that one.
func (c *Client) CordonSupported(ctx context.Context) (bool, error) {
	regs, err := c.Registrations(ctx)
	if err != nil {
		return false, err
	}
	live := int32(-1)
	for _, r := range regs {
		if !r.Fenced {
			live = r.ID
			break
		}
	}
	if live < 0 {
		return false, fmt.Errorf("detecting cordoning (KIP-1066): no unfenced broker among the %d registered to read configs from", len(regs))
	}
	var found bool
	err = c.withTimeout(ctx, fmt.Sprintf("reading the configs of broker %d to detect cordoning (KIP-1066)", live), func(ctx context.Context) error {
		// A named broker describes its own configs, defaults included; the
		// cluster-wide resource would list only dynamic defaults.
		resp, err := c.admin.DescribeBrokerConfigs(ctx, live)
		if err != nil {
			return err
		}
		for _, rc := range resp {
			if rc.Err != nil {
				return fmt.Errorf("broker %s: %w", rc.Name, rc.Err)
			}
			for _, cfg := range rc.Configs {
				if cfg.Key == ConfigCordonedLogDirs {
					found = true
				}
			}
		}
		return nil
	})
	return found, err
}

// SetCordon cordons every log dir of each broker (on) or removes the cordon
// (off). A broker takes its own dynamic config, so every broker named must
// be up. It returns once the controller has committed the change: the
// brokers apply it from the metadata log a moment later and tell the
// controller's placement with their next heartbeats.
//
// It does not wait until the brokers show it. On a broker holding 750
// replicas here that took 4 s to 27 s (its metadata publisher was busy),
// and every drain step that keeps a leaving broker sets the cordon again:
// the wait was a fixed cost at the start of a drain and after every such
// step (make bench-reassign, BenchmarkFirstStep1000Partitions). Waiting
// did not close the window either, since the controller learns of a
// cordon only from heartbeats after that; the check before the platform
// stops a broker catches a replica placed meanwhile.
func (c *Client) SetCordon(ctx context.Context, brokers []int32, on bool) error {
	if len(brokers) == 0 {
		return nil
	}
	cfg, what := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: ConfigCordonedLogDirs}, "removing the cordon"
	if on {
		all := "*"
		cfg, what = kadm.AlterConfig{Op: kadm.SetConfig, Name: ConfigCordonedLogDirs, Value: &all}, "cordoning"
	}
	return c.alterBrokers(ctx, fmt.Sprintf("%s of brokers %v", what, brokers), brokers, []kadm.AlterConfig{cfg})
}

// Cordons returns each broker's cordoned.log.dirs as set dynamically on it
// ("" when unset).
func (c *Client) Cordons(ctx context.Context, brokers []int32) (map[int32]string, error) {
	dyn, err := c.dynamicBrokerConfigs(ctx, "reading the brokers' cordons", brokers)
	out := make(map[int32]string, len(dyn))
	for id, cfgs := range dyn {
		out[id] = cfgs[ConfigCordonedLogDirs]
	}
	return out, err
}
