package executor

import (
	"testing"
	"time"
)

// Samples of a rebalance that receives on hundreds of brokers are thinned
// by their brokers too, so the record stays bounded.
func TestSamplesBoundedByBrokers(t *testing.T) {
	var op Operation
	start := time.Unix(0, 0)
	for i := range 1000 {
		rec := make(map[int32]int64, 500)
		for b := range int32(500) {
			rec[b] = int64(i)
		}
		op.addSample(ProgressSample{At: start.Add(time.Duration(i) * time.Second), Received: rec})
	}
	if n := sampleEntries(op.Samples); n > maxSampleEntries {
		t.Fatalf("%d broker entries in %d samples; want at most %d", n, len(op.Samples), maxSampleEntries)
	}
	if len(op.Samples) < 10 || !op.Samples[0].At.Equal(start) || !op.Samples[len(op.Samples)-1].At.Equal(start.Add(999*time.Second)) {
		t.Fatalf("%d samples from %s to %s; want the first and the newest kept", len(op.Samples), op.Samples[0].At, op.Samples[len(op.Samples)-1].At)
	}
}
