package kafkatest

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FillRecordSize is the size of each record Fill writes.
const FillRecordSize = 4096

// Fill writes about total bytes of incompressible records to topic, spread
// round-robin over its partitions and acknowledged by every in-sync replica,
// so that a reassignment has real bytes to copy. It returns how long the
// writes took.
func Fill(ctx context.Context, bootstrap []string, topic string, total int64) (time.Duration, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedBytes(64<<20),
		// A topic created a moment ago may not be known to every broker yet.
		kgo.UnknownTopicRetries(-1))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := int64(0); i < total/FillRecordSize; i++ {
		v := make([]byte, FillRecordSize)
		if _, err := rand.Read(v); err != nil {
			return 0, err
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, fmt.Errorf("writing to %s: %w", topic, firstErr)
	}
	return time.Since(start), nil
}
