package kafka_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// latencyProducer writes 1 KiB records with acks=all at a steady rate and
// records each one's produce latency (from the Produce call to the broker's
// acknowledgement, time queued in the client included: what an application
// feels) under the phase current when it was sent.
type latencyProducer struct {
	cl    *kgo.Client
	phase atomic.Int32
	stop  chan struct{}
	done  chan struct{}

	mu        sync.Mutex
	latencies map[int32][]time.Duration
	failures  map[int32]int
}

// Phases of the latency measurement. Records sent while the client warms
// up (metadata, producer id, connections) are not counted: they would
// inflate the baseline's tail.
const (
	phaseWarmup int32 = iota - 1
	phaseBefore
	phaseDuring
)

// latencyWarmup is how long startLatencyProducer produces before counting.
const latencyWarmup = 3 * time.Second

func startLatencyProducer(b *testing.B, c *kafkatest.Cluster, topic string, perSecond int) *latencyProducer {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	p := &latencyProducer{cl: cl, stop: make(chan struct{}), done: make(chan struct{}),
		latencies: map[int32][]time.Duration{}, failures: map[int32]int{}}
	p.phase.Store(phaseWarmup)
	value := make([]byte, 1024)
	_, _ = rand.Read(value)
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			phase, sent := p.phase.Load(), time.Now()
			cl.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				took := time.Since(sent)
				p.mu.Lock()
				defer p.mu.Unlock()
				if phase == phaseWarmup {
					return
				}
				if err != nil {
					p.failures[phase]++
					return
				}
				p.latencies[phase] = append(p.latencies[phase], took)
			})
		}
	}()
	time.Sleep(latencyWarmup)
	p.phase.Store(phaseBefore)
	return p
}

// finish stops producing, waits for every record's answer and returns the
// latencies and failures by phase.
func (p *latencyProducer) finish() (map[int32][]time.Duration, map[int32]int) {
	close(p.stop)
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = p.cl.Flush(ctx)
	p.cl.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latencies, p.failures
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}

// reportLatency prints the p50/p99 table of both phases and their ratios,
// and reports them as metrics.
func reportLatency(b *testing.B, lat map[int32][]time.Duration, failed map[int32]int, rate int) {
	b.Helper()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var p50, p99 [2]time.Duration
	table := fmt.Sprintf("acks=all producer, %d records/s of 1 KiB:\n%-22s %8s %10s %10s %8s\n", rate, "phase", "records", "p50 ms", "p99 ms", "failed")
	for i, name := range []string{"before the scale-out", "during the scale-out"} {
		ls := slices.Clone(lat[int32(i)])
		slices.Sort(ls)
		p50[i], p99[i] = percentile(ls, 0.50), percentile(ls, 0.99)
		table += fmt.Sprintf("%-22s %8d %10.2f %10.2f %8d\n", name, len(ls), ms(p50[i]), ms(p99[i]), failed[int32(i)])
	}
	r50, r99 := ms(p50[1])/ms(p50[0]), ms(p99[1])/ms(p99[0])
	table += fmt.Sprintf("%-22s %8s %10.2f %10.2f\n", "ratio during/before", "", r50, r99)
	b.Log(table)
	b.ReportMetric(ms(p50[0]), "before_p50_ms")
	b.ReportMetric(ms(p99[0]), "before_p99_ms")
	b.ReportMetric(ms(p50[1]), "during_p50_ms")
	b.ReportMetric(ms(p99[1]), "during_p99_ms")
	b.ReportMetric(r50, "p50_during/before")
	b.ReportMetric(r99, "p99_during/before")
}
