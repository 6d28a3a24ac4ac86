package kafka

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicReader serves the topic resource's refresh. Terraform reads each
// topic of a configuration in its own call, ten at a time; answering each
// with its own Metadata and DescribeConfigs requests costs two round trips
// per topic. The reader answers the first topic asked for on its own, and
// as soon as a second topic is asked for it reads every topic of the
// cluster in one batch (DescribeTopics with nil names) and serves the rest
// of the refresh from that read.
//
// A batch is trusted for its TTL only. Topics this client changes are
// invalidated (Invalidate) and read afresh on their own. Clusters with more than
// MaxBatchTopics topics are read topic by topic: a batch would describe
// far more topics than a configuration is likely to manage. So are all
// reads after a batch failed, so that each read reports its own error and
// no read retries the batch.
type TopicReader struct {
	c   *Client
	ttl time.Duration

	mu     sync.Mutex
	batch  *topicBatch
	asked  map[string]bool
	stale  map[string]time.Time // topic → when it was forgotten
	noBulk bool                 // the cluster has too many topics for a batch read
}

// MaxBatchTopics is the largest cluster, in topics, the reader reads in
// one batch.
const MaxBatchTopics = 20000

// topicReaderTTL is how long a batch read serves: long enough for one
// refresh of thousands of topics, short enough that a later plan in the
// same provider process sees what changed meanwhile.
const topicReaderTTL = 30 * time.Second

type topicBatch struct {
	done   chan struct{}
	at     time.Time
	topics map[string]TopicDescription
	err    error
}

func (b *topicBatch) expired(now time.Time, ttl time.Duration) bool {
	select {
	case <-b.done:
		return b.err != nil || now.Sub(b.at) > ttl
	default:
		return false // still reading: wait for it
	}
}

// NewTopicReader returns a reader with its own batch.
func NewTopicReader(c *Client) *TopicReader {
	return &TopicReader{c: c, ttl: topicReaderTTL, asked: map[string]bool{}, stale: map[string]time.Time{}}
}

// Describe returns the topic; ok is false when it does not exist.
func (r *TopicReader) Describe(ctx context.Context, name string) (TopicDescription, bool, error) {
	r.mu.Lock()
	b := r.batch
	if b != nil && b.expired(time.Now(), r.ttl) {
		b, r.batch = nil, nil
	}
	_, forgotten := r.stale[name]
	useBatch := !forgotten && !r.noBulk
	start := false
	if useBatch && b == nil {
		r.asked[name] = true
		if len(r.asked) > 1 {
			b = &topicBatch{done: make(chan struct{})}
			r.batch, start = b, true
		}
	}
	r.mu.Unlock()

	if start {
		r.fill(ctx, b)
	}
	if useBatch && b != nil {
		select {
		case <-b.done:
		case <-ctx.Done():
			return TopicDescription{}, false, ctx.Err()
		}
		if b.err == nil {
			d, ok := b.topics[name]
			return d, ok, nil
		}
		// The batch failed (or was refused as too large): read this topic
		// on its own, which reports its own error if the cluster is down.
	}
	got, err := r.c.DescribeTopics(ctx, []string{name})
	if err != nil {
		return TopicDescription{}, false, err
	}
	d, ok := got[name]
	return d, ok, nil
}

var errTooManyTopics = errors.New("too many topics for one batch")

func (r *TopicReader) fill(ctx context.Context, b *topicBatch) {
	defer close(b.done)
	started := time.Now()
	b.err = r.c.withTimeout(ctx, "describing every topic", func(ctx context.Context) error {
		// The Metadata of every topic is cheap next to their configs:
		// count before asking for those. Internal topics included: a
		// configuration may manage one.
		var err error
		b.topics, err = r.c.describe(ctx, nil, false, func(md *kmsg.MetadataResponse) error {
			if len(md.Topics) > MaxBatchTopics {
				return errTooManyTopics
			}
			return nil
		})
		return err
	})
	b.at = time.Now()
	if b.err != nil {
		// Read topic by topic from now on: each read then reports its own
		// error, and a failing batch is not retried by every read.
		r.mu.Lock()
		r.noBulk = true
		r.mu.Unlock()
	} else {
		r.mu.Lock()
		for name, at := range r.stale {
			if at.Before(started) {
				delete(r.stale, name) // the batch read it after the change
			}
		}
		r.mu.Unlock()
	}
}

// Invalidate makes the next Describe of name read it afresh: call it after
// changing the topic.
func (r *TopicReader) Invalidate(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stale[name] = time.Now()
}

// clientTopics is what a Client keeps for its topics: the refresh reader,
// and the placement lock with the placements Kafka may not show yet.
type clientTopics struct {
	reader *TopicReader

	placeMu sync.Mutex
	placed  map[string]placedTopic
}

// Topics returns this client's shared topic reader.
func (c *Client) Topics() *TopicReader { return c.topics.reader }
