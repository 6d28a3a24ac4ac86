package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

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
// there is none (or its latest record is a tombstone). It reads only what was
// written since the client's previous read of the topic (operationsLog), so a
// refresh that looks up one key per topic reads the topic once.
func (c *Client) GetOperation(ctx context.Context, key string) (value []byte, ok bool, err error) {
	l := &c.operations
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, _, err := l.update(ctx, c, "loading operation "+key); err != nil {
		return nil, false, err
	}
	value, ok = l.values[key]
	return value, ok, nil
}

// ListOperations returns the latest value of every key that has one.
func (c *Client) ListOperations(ctx context.Context) (map[string][]byte, error) {
	l := &c.operations
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, _, err := l.update(ctx, c, "listing the operations in "+OperationsTopic); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(l.values))
	for k, v := range l.values {
		out[k] = v
	}
	return out, nil
}

// operationsLog is the operations topic as last read: the latest value of
// each key and the offset to read from next. A Client keeps one for its
// loads; each OperationFeed keeps its own. The caller serializes updates
// (mu, for the client's).
type operationsLog struct {
	mu     sync.Mutex
	next   int64
	values map[string][]byte
}

// update reads what was written since the last update and returns the keys
// it changed, a nil value for a key now gone, and whether the topic exists.
// On an error the log is left as it was. A topic that is gone, or that was
// deleted and made again (its end is behind what was read), is read from
// the start.
func (l *operationsLog) update(ctx context.Context, c *Client, what string) (changed map[string][]byte, exists bool, err error) {
	r, err := c.readOperations(ctx, what, l.next, func(string) bool { return true })
	if err != nil {
		return nil, false, err
	}
	changed = r.values
	if !r.exists || r.reread {
		for k := range l.values {
			if _, ok := changed[k]; !ok {
				changed[k] = nil
			}
		}
		l.values = nil
	}
	if l.values == nil {
		l.values = map[string][]byte{}
	}
	for k, v := range changed {
		if v == nil {
			delete(l.values, k)
			continue
		}
		l.values[k] = v
	}
	l.next = r.next
	if !r.exists {
		l.next = 0
	}
	return changed, r.exists, nil
}

// ErrNoOperationsTopic says the operations topic does not exist: no
// kafkascale operation has run on the cluster.
var ErrNoOperationsTopic = errors.New("no kafkascale operation has run on this cluster: topic " + OperationsTopic + " does not exist")

// operationsRead is what one read of the operations topic found: the
// latest value of each key read (nil for a tombstone), the offset to read
// from next, whether the topic exists, and whether it was read from the
// start because its end was behind the offset asked for (it was made again).
type operationsRead struct {
	values map[string][]byte
	next   int64
	exists bool
	reread bool
}

// readOperations reads the topic from offset from to its end offset with a
// short-lived consumer, keeping the latest value of each key that want
// accepts; a key whose latest record is a tombstone maps to nil.
func (c *Client) readOperations(ctx context.Context, what string, from int64, want func(key string) bool) (operationsRead, error) {
	out := operationsRead{values: map[string][]byte{}, next: from}
	err := c.withTimeout(ctx, what, func(ctx context.Context) error {
		ends, err := c.endOffsets(ctx, nil, OperationsTopic)
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
		out.exists = true
		if end.Offset < from {
			from, out.next, out.reread = 0, 0, true
		}
		if end.Offset <= from {
			return nil
		}
		out.next = end.Offset
		start := kgo.NewOffset().AtStart()
		if from > 0 {
			start = kgo.NewOffset().At(from)
		}
		return c.readPartition0(ctx, OperationsTopic, start, end.Offset, func(r *kgo.Record) {
			if k := string(r.Key); want(k) {
				out.values[k] = r.Value
			}
		}, kgo.FetchMaxBytes(operationMaxBytes*2))
	})
	return out, err
}

// readPartition0 reads partition 0 of topic from offset from up to, not
// including, offset end, calling fn for each record. It uses a short-lived
// consumer with the client's connection settings, so that the client's own
// consumers are left alone.
func (c *Client) readPartition0(ctx context.Context, topic string, from kgo.Offset, end int64, fn func(*kgo.Record), opts ...kgo.Opt) error {
	cons, err := kgo.NewClient(append(append(append([]kgo.Opt(nil), c.opts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: from}})), opts...)...)
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
			if r.Offset >= end {
				done = true
				return
			}
			fn(r)
			if r.Offset >= end-1 {
				done = true
			}
		})
		if done {
			return nil
		}
	}
}

func strPtr(s string) *string { return &s }
