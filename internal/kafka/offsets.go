package kafka

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Every ListOffsets the provider sends goes through listOffsets.
//
// A partition whose leader just changed answers OFFSET_NOT_AVAILABLE
// ("the leader high watermark has not caught up from a recent leader
// election") until the new leader's followers have fetched once, and one
// whose leader moved can answer NOT_LEADER_OR_FOLLOWER or
// LEADER_NOT_AVAILABLE for a moment. The executor elects preferred leaders
// at the end of every operation, so the next plan's read of the moving
// partitions' growth, or the next operation's read of the lease, met them:
// a plan right after an apply failed with OFFSET_NOT_AVAILABLE on one of
// the partitions that apply had moved (make bench-eta). franz-go retries
// the request, not a partition's error, so the retry is here.

// offsetsRetryBackoff is the first wait before asking again; it doubles up
// to offsetsRetryMaxBackoff. A new leader's high watermark catches up at
// its followers' next fetch, within milliseconds on a healthy cluster.
// offsetsRetryFor bounds the whole: a partition with no leader at all (its
// replicas' brokers dead) answers LEADER_NOT_AVAILABLE for good, and its
// error should come in seconds, not at the end of the request timeout.
const (
	offsetsRetryBackoff    = 50 * time.Millisecond
	offsetsRetryMaxBackoff = time.Second
	offsetsRetryFor        = 5 * time.Second
)

// listOffsets calls list until no partition that need accepts (nil: every
// partition) answers with an error that passes on its own
// (kerr.IsRetriable), for offsetsRetryFor at most. UNKNOWN_TOPIC_OR_PARTITION
// is not retried: Kafka calls it retriable, but here it says the topic is
// not there, which the callers handle. When the time or ctx ends first, the
// last answer is returned as it is, so that the caller names the partition
// and its error.
func listOffsets(ctx context.Context, need func(topic string, partition int32) bool, list func(context.Context) (kadm.ListedOffsets, error)) (kadm.ListedOffsets, error) {
	backoff := offsetsRetryBackoff
	giveUp := time.After(offsetsRetryFor)
	for {
		listed, err := list(ctx)
		if err != nil || !passing(listed, need) {
			return listed, err
		}
		select {
		case <-ctx.Done():
			return listed, nil
		case <-giveUp:
			return listed, nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, offsetsRetryMaxBackoff)
	}
}

// passing says whether a partition of listed that need accepts answered
// with an error that asking again can clear.
func passing(listed kadm.ListedOffsets, need func(topic string, partition int32) bool) bool {
	found := false
	listed.Each(func(o kadm.ListedOffset) {
		found = found || (kerr.IsRetriable(o.Err) && !errors.Is(o.Err, kerr.UnknownTopicOrPartition) && needed(need, o.Topic, o.Partition))
	})
	return found
}

// needed says whether need (nil: every partition) accepts the partition.
func needed(need func(topic string, partition int32) bool, topic string, partition int32) bool {
	return need == nil || need(topic, partition)
}

// startOffsets, endOffsets and offsetsAfterMilli are kadm's ListStartOffsets,
// ListEndOffsets and ListOffsetsAfterMilli through listOffsets, for the
// partitions need accepts (nil: all of them).
func (c *Client) startOffsets(ctx context.Context, need func(string, int32) bool, topics ...string) (kadm.ListedOffsets, error) {
	return listOffsets(ctx, need, func(ctx context.Context) (kadm.ListedOffsets, error) { return c.admin.ListStartOffsets(ctx, topics...) })
}

func (c *Client) endOffsets(ctx context.Context, need func(string, int32) bool, topics ...string) (kadm.ListedOffsets, error) {
	return listOffsets(ctx, need, func(ctx context.Context) (kadm.ListedOffsets, error) { return c.admin.ListEndOffsets(ctx, topics...) })
}

func (c *Client) offsetsAfterMilli(ctx context.Context, need func(string, int32) bool, millis int64, topics ...string) (kadm.ListedOffsets, error) {
	return listOffsets(ctx, need, func(ctx context.Context) (kadm.ListedOffsets, error) {
		return c.admin.ListOffsetsAfterMilli(ctx, millis, topics...)
	})
}
