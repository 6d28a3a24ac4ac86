package kafkatest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// RequestCount counts the requests a client writes to brokers, by Kafka
// API name: the proof that a batched read is batched. Pass its Add as
// kafka.Config.OnRequest. Safe for concurrent use.
type RequestCount struct {
	mu sync.Mutex
	n  map[string]int
}

// Add counts one request of api.
func (rc *RequestCount) Add(api string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.n == nil {
		rc.n = map[string]int{}
	}
	rc.n[api]++
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
	parts := make([]string, 0, len(rc.n))
	for _, k := range slices.Sorted(maps.Keys(rc.n)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, rc.n[k]))
	}
	return strings.Join(parts, " ")
}
