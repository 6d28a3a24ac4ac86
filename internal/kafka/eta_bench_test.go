package kafka_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// BenchmarkETA holds the plan's ETA against the apply on one real local
// cluster, scenario after scenario (make bench-eta):
//
//	go test -run '^$' -bench '^BenchmarkETA$' -benchtime 1x ./internal/kafka/
//
// The last scenario moves hundreds of empty partitions, where the
// per-move settle time is the estimate.
//
// Each scenario is estimated as the provider's plan estimates it (the
// executor's preview from a fresh snapshot and the operation log, then
// Preview.ETA), and then applied through the executor as the provider
// applies it, with the operation log on the cluster itself: the second
// scale-out estimates with the broker add time the first one measured.
// It prints estimated, actual and their ratio; the target is 0.8 to 1.25.
// Like the other benchmarks it fails on no figure: timing is the machine's.
func BenchmarkETA(b *testing.B) {
	const (
		throttle = 4 << 20
		method   = "kafkatest"
	)
	for i := 0; i < b.N; i++ {
		ctx := context.Background()
		c, err := kafkatest.Start(ctx, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
		if err != nil {
			b.Fatal(err)
		}
		fill(b, c, "eta-load", 12, 2, 160<<20)
		fill(b, c, "eta-rf", 6, 2, 48<<20)
		// The plan counts what producers wrote in the last
		// engine.GrowthWindow as live writes to catch up on; the fill is
		// not, so the first plan comes once it has left that window.
		time.Sleep(engine.GrowthWindow)
		cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
		if err != nil {
			b.Fatal(err)
		}
		store := cl.Operations()
		if err := store.Ensure(ctx); err != nil {
			b.Fatal(err)
		}
		desc, err := cl.DescribeCluster(ctx)
		if err != nil {
			b.Fatal(err)
		}
		key := "cluster/" + desc.ClusterID
		opts := engine.DefaultOptions()
		opts.ThrottleBytesPerSec = throttle
		tl := &timeline{}
		// Samples every 2 s rather than the default 10 s: these copies
		// last seconds to a minute, and the re-estimate at a tenth done
		// needs samples before it.
		ex := executor.New(executor.Deps{Kafka: cl.Port(), Scaler: kafkatest.Scaler{C: c}, Store: store, Log: tl}, executor.Settings{SampleInterval: 2 * time.Second})

		var rows []etaRow
		run := func(name string, estimate func() (engine.ETA, error), apply func() (*executor.Operation, error)) {
			// The pre-check refuses an under-replicated cluster, as it
			// would refuse the provider: a follower the last scenario's
			// load left behind catches up first.
			awaitInSync(b, cl)
			eta, err := estimate()
			if err != nil {
				b.Fatalf("%s: estimating: %v", name, err)
			}
			tl.reset()
			start := time.Now()
			op, err := apply()
			if err != nil {
				b.Fatalf("%s: applying: %v\n%s", name, err, tl.String())
			}
			end := time.Now()
			actual := end.Sub(start)
			rows = append(rows, etaRow{name: name, eta: eta, actual: actual, tenth: reEstimateAtATenth(op, end)})
			b.Logf("%s: estimated %s, actual %s\n%s", name, eta, actual.Round(100*time.Millisecond), tl.String())
		}
		scaleWith := func(name string, target int, opts engine.Options) {
			var pv *executor.Preview
			var prev *executor.Operation
			run(name, func() (engine.ETA, error) {
				snap, err := cl.Snapshot(ctx)
				if err != nil {
					return engine.ETA{}, err
				}
				if prev, err = store.Load(ctx, key); err != nil {
					return engine.ETA{}, err
				}
				if pv, err = executor.PreviewScaleFrom(kafka.EngineCluster(snap), prev, target, nil, executor.BalanceNone, opts); err != nil {
					return engine.ETA{}, err
				}
				if err := executor.MeasureGrowth(ctx, cl.Port(), pv.Plan); err != nil {
					return engine.ETA{}, err
				}
				savePlan(b, name, pv.Plan)
				return pv.ETA(prev, method, 0, throttle), nil
			}, func() (*executor.Operation, error) {
				return ex.Scale(ctx, executor.ScaleRequest{Key: key, ID: fmt.Sprintf("op-%d", time.Now().UnixNano()), TargetBrokerCount: target,
					Options: opts, InitialThrottle: throttle, ScalingMethod: method})
			})
		}
		scale := func(name string, target int) { scaleWith(name, target, opts) }

		scale("scale-out 3→5 (default add time)", 5)

		// The replication factor change runs under acks=all produce load
		// on the topic it changes.
		load := startLoad(b, c.BootstrapServers(), "eta-rf", 1<<20)
		// A window of the load before the plan measures its rate.
		time.Sleep(engine.GrowthWindow)
		rfKey := "topic/" + desc.ClusterID + "/eta-rf"
		run("replication factor 2→3 of eta-rf under acks=all load", func() (engine.ETA, error) {
			snap, err := cl.Snapshot(ctx)
			if err != nil {
				return engine.ETA{}, err
			}
			prev, err := store.Load(ctx, rfKey)
			if err != nil {
				return engine.ETA{}, err
			}
			p, _, err := executor.PreviewReplicationFactorFrom(kafka.EngineCluster(snap), prev, nil, "eta-rf", 3, throttle, nil)
			if err != nil {
				return engine.ETA{}, err
			}
			if err := executor.MeasureGrowth(ctx, cl.Port(), p); err != nil {
				return engine.ETA{}, err
			}
			return p.ETA(engine.ETAInputs{Throttle: throttle}), nil
		}, func() (*executor.Operation, error) {
			return ex.ChangeReplicationFactor(ctx, executor.ReplicationFactorRequest{Key: rfKey, ID: fmt.Sprintf("op-%d", time.Now().UnixNano()),
				Topic: "eta-rf", ReplicationFactor: 3, Throttle: throttle})
		})
		produced := load.stop()
		b.Logf("the load wrote %s with acks=all during the replication factor change", engine.HumanBytes(produced))

		// kafkatest's scaler counts a stopped broker as one of the
		// cluster's, so the scale-ins come after the scale-outs.
		scale("scale-out 5→6 (measured add time)", 6)
		scale("scale-in 6→5", 5)

		// Many empty moves in few large groups, as a cluster of thousands
		// of small partitions makes: the time is Kafka's and the
		// executor's per move, not the copy's.
		fill(b, c, "eta-wide", 1000, 2, 0)
		wide := opts
		wide.MaxMovesPerBroker, wide.MaxMovesPerStep = 1000, 500
		scaleWith("scale-in 5→4 of 1,000 more empty partitions", 4, wide)

		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SCENARIO\tESTIMATED\tACTUAL\tRATIO\tAT A TENTH DONE: RE-ESTIMATE, REAL, OFF\tBREAKDOWN")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%s\n", r.name, r.eta.Total().Round(100*time.Millisecond), r.actual.Round(100*time.Millisecond),
				r.eta.Total().Seconds()/r.actual.Seconds(), r.tenth, r.eta)
		}
		_ = tw.Flush()
		cl.Close()
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
	}
}

func awaitInSync(b *testing.B, cl *kafka.Client) {
	b.Helper()
	var behind []string
	for range 120 {
		ps, err := cl.Port().Partitions(context.Background())
		behind = nil
		for _, p := range ps {
			if len(p.ISR) < len(p.Replicas) {
				behind = append(behind, fmt.Sprintf("%s p%d (replicas %v, in sync %v)", p.Topic, p.Partition, p.Replicas, p.ISR))
			}
		}
		if err == nil && len(behind) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	b.Fatalf("%d partition(s) still under-replicated after 60s: %s", len(behind), strings.Join(behind, "; "))
}

type etaRow struct {
	name   string
	eta    engine.ETA
	actual time.Duration
	tenth  string
}

// reEstimateAtATenth is the apply's own re-estimate (ProgressSample.Projected)
// in the first sample with a tenth of the bytes done, against the time that
// was really left then (end is when the apply returned), and how far off
// it was. Before the pace is known there is none: "-".
func reEstimateAtATenth(op *executor.Operation, end time.Time) string {
	if op == nil || op.Plan == nil || op.Plan.TotalBytes == 0 {
		return "- (no bytes to copy)"
	}
	for _, s := range op.Samples {
		if s.Phase != executor.PhaseReassign || s.Done*10 < op.Plan.TotalBytes {
			continue
		}
		if s.Projected <= 0 {
			return fmt.Sprintf("- (no pace yet at %d%% done)", 100*s.Done/op.Plan.TotalBytes)
		}
		left := end.Sub(s.At)
		return fmt.Sprintf("%s, %s, %+.0f%%", s.Projected.Round(100*time.Millisecond), left.Round(100*time.Millisecond),
			100*(s.Projected.Seconds()/left.Seconds()-1))
	}
	return "- (no sample past a tenth)"
}

// timeline keeps the executor's log lines with their time since reset, to
// show where an apply's time went.
type timeline struct {
	mu    sync.Mutex
	start time.Time
	lines []string
}

func (t *timeline) reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start, t.lines = time.Now(), nil
}

func (t *timeline) Info(_ context.Context, msg string, f map[string]any) { t.add(msg, f) }
func (t *timeline) Warn(_ context.Context, msg string, f map[string]any) { t.add("WARN "+msg, f) }

func (t *timeline) add(msg string, f map[string]any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	extra := ""
	for _, k := range []string{"phase", "group", "group_busiest_bytes", "registered_after", "in_metadata_after", "reorders", "elections", "verify", "elect"} {
		if v, ok := f[k]; ok {
			extra += fmt.Sprintf(" %s=%v", k, v)
		}
	}
	t.lines = append(t.lines, fmt.Sprintf("%7.2fs %s%s", time.Since(t.start).Seconds(), msg, extra))
}

func (t *timeline) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// produceLoad writes incompressible records with acks=all at about a fixed
// rate until stopped.
type produceLoad struct {
	cancel  context.CancelFunc
	done    chan struct{}
	written atomic.Int64
}

func startLoad(b *testing.B, bootstrap []string, topic string, bytesPerSec int) *produceLoad {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &produceLoad{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer cl.Close()
		// Ten batches a second keep the rate even.
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		per := bytesPerSec / 10 / kafkatest.FillRecordSize
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for j := 0; j < per; j++ {
				v := make([]byte, kafkatest.FillRecordSize)
				_, _ = rand.Read(v)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(r *kgo.Record, err error) {
					if err == nil {
						l.written.Add(int64(len(r.Value)))
					}
				})
			}
		}
	}()
	return l
}

func (l *produceLoad) stop() int64 {
	l.cancel()
	<-l.done
	return l.written.Load()
}
