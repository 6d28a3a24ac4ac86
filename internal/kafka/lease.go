package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// LeaseTopic is the log of the cluster-wide operation lease: claims,
// heartbeats and releases, appended to its one partition (see the executor's
// lease.go for the rules). It sits next to OperationsTopic rather than in
// it, because it needs what that topic must not have:
//   - deletion by time, not compaction: compaction keeps one record per key
//     and so would erase the log order the lease is decided by;
//   - message.timestamp.type=LogAppendTime: the broker stamps every record
//     with its own clock, so every contender judges expiry on one clock;
//   - and older kafkascale releases write OperationsTopic with keyed
//     partitioning and read its partition 0 only, so it must keep one
//     partition.
const LeaseTopic = "__kafkascale_lease"

// leaseRetention bounds the lease log on disk; a reader needs only the last
// executor.LeaseWindow of it.
const (
	leaseRetention = 24 * time.Hour
	leaseSegment   = time.Hour
)

// LeaseLog implements executor.LeaseLog on LeaseTopic.
type LeaseLog struct {
	c    *Client
	once sync.Once
	err  error
}

var _ executor.LeaseLog = (*LeaseLog)(nil)

// LeaseLog returns the lease log of this client's cluster.
func (c *Client) LeaseLog() *LeaseLog { return &LeaseLog{c: c} }

// Ensure creates LeaseTopic when it is missing: one partition, replicated
// like the operations topic, deleted by time, stamped by the broker.
func (l *LeaseLog) Ensure(ctx context.Context) error {
	l.once.Do(func() { l.err = l.ensure(ctx) })
	return l.err
}

func (l *LeaseLog) ensure(ctx context.Context) error {
	regs, err := l.c.Registrations(ctx)
	if err != nil {
		return err
	}
	rf, minISR := internalReplication(len(regs))
	err = l.c.withTimeout(ctx, "creating the operation lease topic "+LeaseTopic, func(ctx context.Context) error {
		resp, err := l.c.admin.CreateTopic(ctx, 1, rf, map[string]*string{
			"cleanup.policy":         strPtr("delete"),
			"message.timestamp.type": strPtr("LogAppendTime"),
			"retention.ms":           strPtr(strconv.FormatInt(leaseRetention.Milliseconds(), 10)),
			"segment.ms":             strPtr(strconv.FormatInt(leaseSegment.Milliseconds(), 10)),
			"min.insync.replicas":    &minISR,
		}, LeaseTopic)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			// As for the operations topic: an administrator may have
			// created it for a principal that may not create topics.
			if td, derr := l.c.admin.ListTopics(ctx, LeaseTopic); derr == nil && td[LeaseTopic].Err == nil && len(td[LeaseTopic].Partitions) > 0 {
				return nil
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	// A produce right after the creation can race the brokers learning of
	// the topic; the first claim should not fail on that. A full ISR is
	// not asked for: the lease must work while a broker holding one of
	// its replicas is dead, which is when an operation heals it.
	return l.c.AwaitTopicLeaders(ctx, LeaseTopic, 1)
}

// Append writes one record, acknowledged by every in-sync replica.
func (l *LeaseLog) Append(ctx context.Context, r executor.LeaseRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return l.c.withTimeout(ctx, "appending to the operation lease "+LeaseTopic, func(ctx context.Context) error {
		return l.c.kgo.ProduceSync(ctx, &kgo.Record{Topic: LeaseTopic, Key: []byte(r.Claim), Value: b}).FirstErr()
	})
}

// Since reads every record the broker appended at or after t, up to the end
// offset when called, with a short-lived consumer.
func (l *LeaseLog) Since(ctx context.Context, t time.Time) ([]executor.LeaseRecord, error) {
	var out []executor.LeaseRecord
	err := l.c.withTimeout(ctx, "reading the operation lease "+LeaseTopic, func(ctx context.Context) error {
		ends, err := l.c.endOffsets(ctx, nil, LeaseTopic)
		if err != nil {
			return err
		}
		end, ok := ends.Lookup(LeaseTopic, 0)
		if !ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
			return nil // no lease log yet: nothing was ever claimed
		}
		if end.Err != nil {
			return fmt.Errorf("end offset of %s: %w", LeaseTopic, end.Err)
		}
		starts, err := l.c.offsetsAfterMilli(ctx, nil, t.UnixMilli(), LeaseTopic)
		if err != nil {
			return err
		}
		start, ok := starts.Lookup(LeaseTopic, 0)
		if !ok || start.Err != nil {
			return fmt.Errorf("offset of %s at %s: %v", LeaseTopic, t.UTC().Format(time.RFC3339), errOr(start.Err, "not listed"))
		}
		if start.Offset < 0 || start.Offset >= end.Offset {
			return nil
		}
		return l.c.readPartition0(ctx, LeaseTopic, kgo.NewOffset().At(start.Offset), end.Offset, func(rec *kgo.Record) {
			var r executor.LeaseRecord
			if json.Unmarshal(rec.Value, &r) == nil && r.Claim != "" {
				r.Offset, r.Time = rec.Offset, rec.Timestamp
				out = append(out, r)
			}
		})
	})
	return out, err
}

func errOr(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}
	return otherwise
}

// internalReplication is the replication of kafkascale's own topics: up to
// three replicas, and two in sync for a write once there are three.
func internalReplication(brokers int) (rf int16, minISR string) {
	rf = int16(min(max(brokers, 1), 3))
	minISR = "1"
	if rf >= 3 {
		minISR = "2"
	}
	return rf, minISR
}
