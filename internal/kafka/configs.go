package kafka

import (
	"context"
	"errors"
	"fmt"
	"github.com/twmb/franz-go/pkg/kerr"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configPropagation bounds how long a config change may take to show in
// DescribeConfigs. Under KRaft the controller commits it and each broker
// applies it from the metadata log a moment later; reading before then
// sees the old value, so every change here waits until it reads back.
const configPropagation = 2 * time.Minute

// await polls ok until it holds, ctx ends, or configPropagation passes.
// The first polls come quickly: brokers apply a committed change within
// milliseconds, and the executor waits on these between a move that
// finished and the next one it starts.
func (c *Client) await(ctx context.Context, what string, ok func() (bool, error)) error {
	deadline := time.Now().Add(configPropagation)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		done, err := ok()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s", configPropagation, what)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (c *Client) alterBrokers(ctx context.Context, what string, brokers []int32, cfgs []kadm.AlterConfig) error {
	if len(brokers) == 0 {
		return nil
	}
	var failed []string
	err := c.withTimeout(ctx, what, func(ctx context.Context) error {
		resp, err := c.admin.AlterBrokerConfigs(ctx, cfgs, brokers...)
		if err != nil {
			return err
		}
		for _, r := range resp {
			if r.Err != nil {
				failed = append(failed, fmt.Sprintf("broker %s: %v %s", r.Name, r.Err, r.ErrMessage))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("%s: %s", what, strings.Join(failed, "; "))
	}
	return nil
}

// dynamicBrokerConfigs returns the configs set dynamically on each broker
// (not the static or default ones), what naming the read in errors.
func (c *Client) dynamicBrokerConfigs(ctx context.Context, what string, brokers []int32) (map[int32]map[string]string, error) {
	out := make(map[int32]map[string]string, len(brokers))
	if len(brokers) == 0 {
		return out, nil
	}
	err := c.withTimeout(ctx, what, func(ctx context.Context) error {
		resp, err := c.admin.DescribeBrokerConfigs(ctx, brokers...)
		if err != nil {
			return err
		}
		for _, rc := range resp {
			if rc.Err != nil {
				return fmt.Errorf("broker %s: %w", rc.Name, rc.Err)
			}
			id, err := strconv.ParseInt(rc.Name, 10, 32)
			if err != nil {
				continue
			}
			cfgs := map[string]string{}
			for _, cfg := range rc.Configs {
				if cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig && cfg.Value != nil {
					cfgs[cfg.Key] = *cfg.Value
				}
			}
			out[int32(id)] = cfgs
		}
		return nil
	})
	return out, err
}

// alterTopics sends each topic's config changes, one request per topic,
// and fails naming every topic Kafka refused. deleted, when not nil, is
// told of the topics Kafka no longer knows instead: for a removal of
// what we set, a topic deleted since took its configs with it.
func (c *Client) alterTopics(ctx context.Context, what string, alters map[string][]kadm.AlterConfig, deleted func(topic string)) error {
	if len(alters) == 0 {
		return nil
	}
	topics := make([]string, 0, len(alters))
	for t := range alters {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var failed []string
	err := c.withTimeout(ctx, what, func(ctx context.Context) error {
		// One request per topic: kadm applies the same configs to every
		// topic named, and each topic's entries differ.
		for _, t := range topics {
			resp, err := c.admin.AlterTopicConfigs(ctx, alters[t], t)
			if err != nil {
				return err
			}
			for _, r := range resp {
				switch {
				case r.Err == nil:
				case deleted != nil && errors.Is(r.Err, kerr.UnknownTopicOrPartition):
					deleted(r.Name)
				default:
					failed = append(failed, fmt.Sprintf("topic %s: %v %s", r.Name, r.Err, r.ErrMessage))
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s: %s", what, strings.Join(failed, "; "))
	}
	return nil
}
