package kafka

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestCount counts the requests a client writes to brokers, by Kafka
// API name: the proof that a batched read is batched. Safe for concurrent
// use.
type RequestCount struct {
	mu sync.Mutex
	n  map[string]int
}

var _ kgo.HookBrokerWrite = (*RequestCount)(nil)

// OnBrokerWrite implements franz-go's hook; a failed write is not counted.
func (rc *RequestCount) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.n == nil {
		rc.n = map[string]int{}
	}
	rc.n[kmsg.NameForKey(key)]++
}

// Total is the number of requests counted.
func (rc *RequestCount) Total() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	t := 0
	for _, v := range rc.n {
		t += v
	}
	return t
}

// Of is the number of requests of one API, such as "Metadata".
func (rc *RequestCount) Of(api string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n[api]
}

// Reset forgets every count.
func (rc *RequestCount) Reset() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.n = nil
}

// String lists the counts by API, sorted by name.
func (rc *RequestCount) String() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	keys := make([]string, 0, len(rc.n))
	for k := range rc.n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, rc.n[k])
	}
	return strings.Join(parts, " ")
}

// NewCountingClient is NewClient with every request counted into rc, for
// benchmarks and tests that prove how many round trips an operation takes.
func NewCountingClient(cfg Config, rc *RequestCount) (*Client, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	c.kgo.Close()
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), c.opts...),
		kgo.WithHooks(rc),
		// As NewClient: operation records are large.
		kgo.ProducerBatchMaxBytes(operationMaxBytes),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()),
	)...)
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka client: %w", err)
	}
	c.kgo = cl
	c.admin = kadm.NewClient(cl)
	c.admin.SetTimeoutMillis(int32(c.cfg.RequestTimeout / time.Millisecond))
	return c, nil
}
