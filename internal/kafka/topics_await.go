package kafka

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"
)

// awaitPoll is the pause between two rounds of an await.
const awaitPoll = 200 * time.Millisecond

// awaitEveryBroker polls check on every live broker until all agree or ctx
// ends. Under KRaft each broker applies a change from the metadata log on
// its own, and a client asks whichever broker it likes: a change is done
// for the user only when every broker shows it. A broker that fails to
// answer is asked again; when ctx ends the error says which broker still
// disagreed and why.
//
// check gets the live brokers of the round too: a replica on a broker that
// is down can be in sync on no broker, and a wait for it would only end
// with ctx.
func (c *Client) awaitEveryBroker(ctx context.Context, what string, check func(ctx context.Context, broker int32, live []int32) (ok bool, why string, err error)) error {
	var lastWhy string
	for {
		brokers, err := c.liveBrokers(ctx)
		if err != nil {
			lastWhy = err.Error()
		} else {
			lastWhy = ""
			for _, b := range brokers {
				ok, why, err := check(ctx, b, brokers)
				if err != nil {
					why = err.Error()
				}
				if !ok || err != nil {
					lastWhy = fmt.Sprintf("broker %d: %s", b, why)
					break
				}
			}
			if lastWhy == "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w; the last check found %s", what, ctx.Err(), lastWhy)
		case <-time.After(awaitPoll):
		}
	}
}

func (c *Client) liveBrokers(ctx context.Context) ([]int32, error) {
	var out []int32
	err := c.withTimeout(ctx, "listing brokers", func(ctx context.Context) error {
		req := metadataRequest([]string{})
		resp, err := req.RequestWith(ctx, c.kgo)
		if err != nil {
			return err
		}
		for _, b := range resp.Brokers {
			out = append(out, b.NodeID)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, err
}

// brokerTopic asks one broker for one topic's metadata; ok is false when
// that broker does not know the topic.
func (c *Client) brokerTopic(ctx context.Context, broker int32, topic string) (TopicDescription, bool, error) {
	var d TopicDescription
	var ok bool
	err := c.withTimeout(ctx, fmt.Sprintf("reading topic %s from broker %d", topic, broker), func(ctx context.Context) error {
		resp, err := metadataRequest([]string{topic}).RequestWith(ctx, c.kgo.Broker(int(broker)))
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			if t.Topic != nil && *t.Topic == topic {
				d, ok, err = topicFromMetadata(t, false)
				return err
			}
		}
		return nil
	})
	return d, ok, err
}

// partitionsReady says why the topic is not yet as wanted: partitions
// 0..n-1 present, each with a leader and every replica on a live broker in
// sync, and rf replicas each when rf > 0. A replica on a broker that is
// down (not in live) cannot be in sync: waiting for it would end only with
// the apply's timeout, after a change that is otherwise done (soak seed 3:
// a broker killed during a replication factor change).
func partitionsReady(d TopicDescription, partitions, rf int, live []int32) (bool, string) {
	if len(d.Partitions) < partitions {
		return false, fmt.Sprintf("topic %s shows %d of %d partitions", d.Name, len(d.Partitions), partitions)
	}
	for _, p := range d.Partitions {
		switch {
		case p.Leader < 0:
			return false, fmt.Sprintf("%s p%d has no leader yet (replicas %v)", d.Name, p.Partition, p.Replicas)
		case rf > 0 && len(p.Replicas) != rf:
			return false, fmt.Sprintf("%s p%d has replicas %v, want %d", d.Name, p.Partition, p.Replicas, rf)
		case !inSync(p.ISR, p.Replicas, live):
			return false, fmt.Sprintf("%s p%d has in-sync replicas %v of %v", d.Name, p.Partition, p.ISR, p.Replicas)
		}
	}
	return true, ""
}

// AwaitTopicReady waits until every broker shows the topic with its
// partitions 0..partitions-1, each with a leader and a full ISR, and with
// rf replicas each when rf > 0. It returns when ctx ends, with the reason
// the topic is not ready.
func (c *Client) AwaitTopicReady(ctx context.Context, topic string, partitions, rf int) error {
	return c.awaitEveryBroker(ctx, fmt.Sprintf("topic %s to have %d partitions with leaders and full ISRs", topic, partitions),
		func(ctx context.Context, b int32, live []int32) (bool, string, error) {
			d, ok, err := c.brokerTopic(ctx, b, topic)
			if err != nil || !ok {
				return false, "the topic is not known yet", err
			}
			ok, why := partitionsReady(d, partitions, rf, live)
			return ok, why, nil
		})
}

// topicLeadersWait bounds AwaitTopicLeaders. A broker applies the
// controller's metadata log on its own and may lag it: on a loaded 2-core
// machine, a cluster of 5,000 partitions had a broker still not knowing a
// topic a minute after its creation, while the controller reported its
// event queue overloaded. Such a broker catches up; the bound is there for
// one that never does, so it is generous. It does not grow with the
// cluster: the lag follows the backlog of metadata changes and the
// brokers' load, not the partition count.
const topicLeadersWait = 5 * time.Minute

// AwaitTopicLeaders waits until every live broker shows the topic with its
// partitions 0..partitions-1, each with a leader, for at most
// topicLeadersWait. It asks no full ISR: kafkascale's own topics must be
// usable while a broker that holds a replica of them is dead, which is when
// an operation heals it.
func (c *Client) AwaitTopicLeaders(ctx context.Context, topic string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, topicLeadersWait)
	defer cancel()
	return c.awaitEveryBroker(ctx, fmt.Sprintf("topic %s to have %d partitions with leaders", topic, partitions),
		func(ctx context.Context, b int32, live []int32) (bool, string, error) {
			d, ok, err := c.brokerTopic(ctx, b, topic)
			if err != nil || !ok {
				return false, "the topic is not known yet", err
			}
			if len(d.Partitions) < partitions {
				return false, fmt.Sprintf("topic %s shows %d of %d partitions", topic, len(d.Partitions), partitions), nil
			}
			for _, p := range d.Partitions {
				if p.Leader < 0 {
					return false, fmt.Sprintf("%s p%d has no leader (replicas %v)", topic, p.Partition, p.Replicas), nil
				}
			}
			return true, "", nil
		})
}

// AwaitTopicGone waits until no broker shows the topic.
func (c *Client) AwaitTopicGone(ctx context.Context, topic string) error {
	return c.awaitEveryBroker(ctx, fmt.Sprintf("topic %s to be deleted", topic),
		func(ctx context.Context, b int32, live []int32) (bool, string, error) {
			_, ok, err := c.brokerTopic(ctx, b, topic)
			return !ok, "the topic is still listed", err
		})
}

// AwaitTopicConfigs waits until every broker shows the topic's own configs
// with each key of set at its value and no key of gone.
func (c *Client) AwaitTopicConfigs(ctx context.Context, topic string, set map[string]string, gone []string) error {
	if len(set) == 0 && len(gone) == 0 {
		return nil
	}
	// A config that never reads back as written is a mismatch to report,
	// not a reason to wait for the whole apply's timeout.
	ctx, cancel := context.WithTimeout(ctx, 2*configPropagation)
	defer cancel()
	return c.awaitEveryBroker(ctx, fmt.Sprintf("the configs of topic %s to take effect", topic),
		func(ctx context.Context, b int32, live []int32) (bool, string, error) {
			var got map[string]topicConfigs
			err := c.withTimeout(ctx, fmt.Sprintf("reading the configs of topic %s from broker %d", topic, b), func(ctx context.Context) error {
				var err error
				got, err = c.describeTopicConfigsOnce(ctx, []string{topic}, &b)
				return err
			})
			if err != nil {
				return false, "", err
			}
			own := got[topic].dynamic
			for _, k := range sortedConfigs(set) {
				if v, ok := own[k]; !ok || !SameConfigValue(v, set[k]) {
					return false, fmt.Sprintf("%s is %q, want %q", k, v, set[k]), nil
				}
			}
			for _, k := range gone {
				if v, ok := own[k]; ok {
					return false, fmt.Sprintf("%s is still set to %q", k, v), nil
				}
			}
			return true, "", nil
		})
}

// inSync says whether every replica on a live broker is in isr.
func inSync(isr, replicas, live []int32) bool {
	for _, r := range replicas {
		if slices.Contains(live, r) && !slices.Contains(isr, r) {
			return false
		}
	}
	return true
}
