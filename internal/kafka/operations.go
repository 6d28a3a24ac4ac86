package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// OperationsTopic holds the plan and progress of every kafkascale operation,
// keyed by operation key, so that a new apply finds an interrupted one and
// resumes it. It is compacted: only the latest record per key matters.
const OperationsTopic = "__kafkascale_operations"

// operationMaxBytes bounds one persisted operation record.
const operationMaxBytes = 16 << 20

// EnsureOperationsTopic creates the operations topic when it is missing:
// one partition, compacted, replicated to at most three brokers.
func (c *Client) EnsureOperationsTopic(ctx context.Context, brokers int) error {
	rf, minISR := internalReplication(brokers)
	return c.withTimeout(ctx, "creating the operations topic "+OperationsTopic, func(ctx context.Context) error {
		maxBytes := strconv.Itoa(operationMaxBytes)
		resp, err := c.admin.CreateTopic(ctx, 1, rf, map[string]*string{
			"cleanup.policy":      strPtr("compact"),
			"max.message.bytes":   &maxBytes,
			"min.insync.replicas": &minISR,
		}, OperationsTopic)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			// Kafka checks CREATE before existence: a principal without it
			// may still use the log an administrator created.
			if td, derr := c.admin.ListTopics(ctx, OperationsTopic); derr == nil && td[OperationsTopic].Err == nil && len(td[OperationsTopic].Partitions) > 0 {
				return nil
			}
		}
		return err
	})
}

// PutOperation writes the latest state of one operation; a nil value is a
// tombstone that forgets it. The write is acknowledged by all in-sync
// replicas before it returns.
func (c *Client) PutOperation(ctx context.Context, key string, value []byte) error {
	return c.withTimeout(ctx, "saving operation "+key, func(ctx context.Context) error {
		return c.kgo.ProduceSync(ctx, &kgo.Record{Topic: OperationsTopic, Key: []byte(key), Value: value}).FirstErr()
	})
}

// GetOperation returns the latest value stored under key, or ok=false when
// there is none (or its latest record is a tombstone). It reads the topic
// from the start to its end offset with a short-lived consumer.
func (c *Client) GetOperation(ctx context.Context, key string) (value []byte, ok bool, err error) {
	err = c.withTimeout(ctx, "loading operation "+key, func(ctx context.Context) error {
		ends, err := c.admin.ListEndOffsets(ctx, OperationsTopic)
		if err != nil {
			return err
		}
		end, found := ends.Lookup(OperationsTopic, 0)
		if !found {
			return nil
		}
		if end.Err != nil {
			if errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
				return nil
			}
			return end.Err
		}
		if end.Offset == 0 {
			return nil
		}
		cons, err := kgo.NewClient(append(append([]kgo.Opt(nil), c.opts...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{OperationsTopic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxBytes(operationMaxBytes*2),
		)...)
		if err != nil {
			return err
		}
		defer cons.Close()
		for {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return err
			}
			var fetchErr error
			fs.EachError(func(t string, p int32, e error) { fetchErr = fmt.Errorf("%s p%d: %w", t, p, e) })
			if fetchErr != nil {
				return fetchErr
			}
			done := false
			fs.EachRecord(func(r *kgo.Record) {
				if string(r.Key) == key {
					value, ok = r.Value, r.Value != nil
				}
				if r.Offset >= end.Offset-1 {
					done = true
				}
			})
			if done {
				return nil
			}
		}
	})
	return value, ok, err
}

func strPtr(s string) *string { return &s }
