package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// BenchmarkETA holds the plan's ETA against the apply on real local
// clusters, scenario after scenario (make bench-eta, which runs
// BenchmarkETATiered after it):
//
//	go test -run '^$' -bench '^BenchmarkETA$' -benchtime 1x ./internal/kafka/
//
// It runs every scenario KAFKASCALE_BENCH_ETA_RUNS times (3 unless set)
// within one benchmark iteration: go test runs a benchmark once with N=1
// before the N that -benchtime asks for, so -benchtime 3x would run each
// scenario four times. Each run starts three clusters in turn:
//   - the main one (3 brokers, racks a,b,c): a first scale-out 3→5 at the
//     default broker add time, a replication factor change under acks=all
//     load, a scale-out 5→6 with the add time the first one measured, a
//     scale-in 6→5, and a scale-in 5→4 that also moves 1,000 empty
//     partitions, where the per-move settle time is the estimate;
//   - the demo's (make demo): 3 brokers, 100 MiB in 24 partitions of
//     replication factor 3, scaled to 5 at 30 MiB/s;
//   - a 4→7 scale-out over racks a,b,c,a.
//
// The demo's and the 4→7 clusters are new, so nothing of theirs is
// measured: they declare the main cluster's measured add time per broker,
// as a user who sets scaling.broker_start_time from an earlier apply.
//
// Each scenario is estimated as the provider's plan estimates it (the
// executor's preview from a fresh snapshot and the operation log, then
// Preview.ETA), and then applied through the executor as the provider
// applies it, with the operation log on the cluster itself. Each run prints
// estimated, actual and their ratio (the target is 0.8 to 1.25), and the
// apply's own re-estimate once a tenth of the bytes were copied against the
// time really left then (the target is within 15 %). The last table gives
// each scenario's median over the runs, with the lowest and highest. Like
// the other benchmarks it fails on no figure: timing is the machine's.
func BenchmarkETA(b *testing.B) {
	runETAScenarios(b, "", func(rows *[]etaRow) {
		addPerBroker := etaMainCluster(b, rows)
		etaDemoCluster(b, addPerBroker, rows)
		etaRacksCluster(b, addPerBroker, rows)
	})
}

// runETAScenarios runs scenarios etaRuns times, printing each run's rows
// (titled with what) and then every scenario's spread over the runs.
func runETAScenarios(b *testing.B, what string, scenarios func(rows *[]etaRow)) {
	var (
		order   []string
		results = map[string][]etaRow{}
	)
	runs := b.N * etaRuns(b)
	for i := 0; i < runs; i++ {
		var rows []etaRow
		scenarios(&rows)
		printETARows(fmt.Sprintf("%srun %d of %d", what, i+1, runs), rows)
		for _, r := range rows {
			if _, ok := results[r.name]; !ok {
				order = append(order, r.name)
			}
			results[r.name] = append(results[r.name], r)
		}
	}
	printETASummary(order, results)
}

// etaRuns is how many runs of every scenario BenchmarkETA makes
// (KAFKASCALE_BENCH_ETA_RUNS, 3 unless set).
func etaRuns(b *testing.B) int {
	v := os.Getenv("KAFKASCALE_BENCH_ETA_RUNS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("KAFKASCALE_BENCH_ETA_RUNS=%q: want a count of runs, 1 or more", v)
	}
	return n
}

// etaBench is one cluster of BenchmarkETA, with the client, operation store
// and executor its scenarios apply through.
type etaBench struct {
	b     *testing.B
	c     *kafkatest.Cluster
	cl    *kafka.Client
	store executor.Store
	key   string
	ex    *executor.Executor
	tl    *timeline
	rows  *[]etaRow
}

const etaMethod = "kafkatest"

func newETABench(b *testing.B, o kafkatest.Options, rows *[]etaRow, fills func(c *kafkatest.Cluster)) *etaBench {
	b.Helper()
	ctx := context.Background()
	c, err := kafkatest.Start(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	fills(c)
	// The plan counts what producers wrote in the last engine.GrowthWindow
	// as live writes to catch up on; the fill is not, so the first plan
	// comes once it has left that window.
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
	tl := &timeline{}
	// Samples every second rather than the default 10 s: these copies last
	// seconds to a minute, and the re-estimate at a tenth done needs
	// samples before it.
	ex := executor.New(executor.Deps{Kafka: cl.Port(), Scaler: kafkatest.Scaler{C: c}, Store: store, Log: tl}, executor.Settings{SampleInterval: time.Second})
	return &etaBench{b: b, c: c, cl: cl, store: store, key: "cluster/" + desc.ClusterID, ex: ex, tl: tl, rows: rows}
}

func (e *etaBench) close() {
	e.cl.Close()
	if err := e.c.Stop(); err != nil {
		e.b.Fatal(err)
	}
}

func (e *etaBench) run(name string, estimate func() (engine.ETA, error), apply func() (*executor.Operation, error)) *executor.Operation {
	b := e.b
	// The pre-check refuses an under-replicated cluster, as it would
	// refuse the provider: a follower the last scenario's load left
	// behind catches up first.
	awaitInSync(b, e.cl)
	eta, err := estimate()
	if err != nil {
		b.Fatalf("%s: estimating: %v", name, err)
	}
	e.tl.reset()
	start := time.Now()
	op, err := apply()
	if err != nil {
		b.Fatalf("%s: applying: %v\n%s", name, err, e.tl.String())
	}
	end := time.Now()
	actual := end.Sub(start)
	row := etaRow{name: name, eta: eta, actual: actual}
	row.tenth, row.tenthOff, row.tenthOK = reEstimateAtATenth(op, end)
	*e.rows = append(*e.rows, row)
	saveRun(b, name, op, start, end)
	b.Logf("%s: estimated %s, actual %s\n%s", name, eta, actual.Round(100*time.Millisecond), e.tl.String())
	return op
}

// scale estimates and applies a change of the broker count; declared is the
// broker add time the scaling method declares (zero: none).
func (e *etaBench) scale(name string, target int, opts engine.Options, declared time.Duration) *executor.Operation {
	ctx := context.Background()
	return e.run(name, func() (engine.ETA, error) {
		snap, err := e.cl.Snapshot(ctx)
		if err != nil {
			return engine.ETA{}, err
		}
		prev, err := e.store.Load(ctx, e.key)
		if err != nil {
			return engine.ETA{}, err
		}
		pv, err := executor.PreviewScaleFrom(kafka.EngineCluster(snap), prev, target, nil, executor.BalanceNone, opts)
		if err != nil {
			return engine.ETA{}, err
		}
		if err := executor.MeasureGrowth(ctx, e.cl.Port(), pv.Plan); err != nil {
			return engine.ETA{}, err
		}
		savePlan(e.b, name, pv.Plan)
		return pv.ETA(prev, etaMethod, declared, opts.ThrottleBytesPerSec), nil
	}, func() (*executor.Operation, error) {
		return e.ex.Scale(ctx, executor.ScaleRequest{Key: e.key, ID: fmt.Sprintf("op-%d", time.Now().UnixNano()), TargetBrokerCount: target,
			Options: opts, InitialThrottle: opts.ThrottleBytesPerSec, ScalingMethod: etaMethod})
	})
}

func etaOptions(throttle int64) engine.Options {
	opts := engine.DefaultOptions()
	opts.ThrottleBytesPerSec = throttle
	return opts
}

// etaMainCluster runs the main cluster's scenarios and returns the broker
// add time per broker its first scale-out measured.
func etaMainCluster(b *testing.B, rows *[]etaRow) time.Duration {
	const throttle = 4 << 20
	ctx := context.Background()
	e := newETABench(b, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}}, rows, func(c *kafkatest.Cluster) {
		fill(b, c, "eta-load", 12, 2, 160<<20)
		fill(b, c, "eta-rf", 6, 2, 48<<20)
	})
	defer e.close()
	opts := etaOptions(throttle)
	first := e.scale("scale-out 3→5 (default add time)", 5, opts, 0)
	addPerBroker := time.Duration(first.Timings.BrokerAddSeconds * float64(time.Second))

	// The replication factor change runs under acks=all produce load on
	// the topic it changes.
	load := startLoad(b, e.c.BootstrapServers(), "eta-rf", 1<<20)
	// A window of the load before the plan measures its rate.
	time.Sleep(engine.GrowthWindow)
	rfKey := strings.Replace(e.key, "cluster/", "topic/", 1) + "/eta-rf"
	e.run("replication factor 2→3 of eta-rf under acks=all load", func() (engine.ETA, error) {
		snap, err := e.cl.Snapshot(ctx)
		if err != nil {
			return engine.ETA{}, err
		}
		prev, err := e.store.Load(ctx, rfKey)
		if err != nil {
			return engine.ETA{}, err
		}
		p, _, err := executor.PreviewReplicationFactorFrom(kafka.EngineCluster(snap), prev, nil, "eta-rf", 3, throttle, nil, nil)
		if err != nil {
			return engine.ETA{}, err
		}
		if err := executor.MeasureGrowth(ctx, e.cl.Port(), p); err != nil {
			return engine.ETA{}, err
		}
		return p.ETA(engine.ETAInputs{Throttle: throttle}), nil
	}, func() (*executor.Operation, error) {
		return e.ex.ChangeReplicationFactor(ctx, executor.ReplicationFactorRequest{Key: rfKey, ID: fmt.Sprintf("op-%d", time.Now().UnixNano()),
			Topic: "eta-rf", ReplicationFactor: 3, Throttle: throttle})
	})
	produced := load.stop()
	b.Logf("the load wrote %s with acks=all during the replication factor change", engine.HumanBytes(produced))

	// kafkatest's scaler counts a stopped broker as one of the cluster's,
	// so the scale-ins come after the scale-outs.
	e.scale("scale-out 5→6 (measured add time)", 6, opts, 0)
	e.scale("scale-in 6→5", 5, opts, 0)

	// Many empty moves in few large groups, as a cluster of thousands of
	// small partitions makes: the time is Kafka's and the executor's per
	// move, not the copy's.
	fill(b, e.c, "eta-wide", 1000, 2, 0)
	wide := opts
	wide.MaxMovesPerBroker, wide.MaxMovesPerStep = 1000, 500
	e.scale("scale-in 5→4 of 1,000 more empty partitions", 4, wide, 0)
	return addPerBroker
}

// etaDemoCluster is make demo's scale-out: 3 brokers holding 100 MiB in 24
// partitions of replication factor 3, grown to 5 at 30 MiB/s, the
// quickstart's initial_throttle.
func etaDemoCluster(b *testing.B, declared time.Duration, rows *[]etaRow) {
	e := newETABench(b, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}}, rows, func(c *kafkatest.Cluster) {
		fill(b, c, "demo", 24, 3, 100<<20)
	})
	defer e.close()
	e.scale("demo: scale-out 3→5 at 30 MiB/s (start time declared)", 5, etaOptions(30<<20), declared)
}

// etaRacksCluster grows 4 brokers over racks a,b,c,a to 7, which ends with
// racks a,b,c,a,b,c,a: 244 MiB in 24 partitions of replication factor 3
// at 8 MiB/s.
func etaRacksCluster(b *testing.B, declared time.Duration, rows *[]etaRow) {
	e := newETABench(b, kafkatest.Options{Brokers: 4, Racks: []string{"a", "b", "c", "a"}}, rows, func(c *kafkatest.Cluster) {
		fill(b, c, "racks", 24, 3, 244<<20)
	})
	defer e.close()
	e.scale("scale-out 4→7 over racks a,b,c,a (start time declared)", 7, etaOptions(8<<20), declared)
}

// BenchmarkETATiered is BenchmarkETA's tiered scenario, on a cluster with
// tiered storage (kafkatest's remote storage fixture), as
// TestAccClusterResource_tieredScaleOut sizes it: topic eta-tiered of 6
// partitions of replication factor 2 holding 192 MiB in 1 MiB segments,
// 3 MiB of each kept locally, so a new replica copies its leader's local
// log (about 19 MiB in all) and builds the rest of its state from remote
// storage (engine.TieredStartTime). It grows 3→5 at 50 MiB/s, then turns
// KIP-1023 on and grows 5→7, where a new replica copies only what is not
// tiered yet. A producer writes to the topic throughout: with KIP-1023 a
// tiered partition nothing is written to does not start its new replicas
// on Kafka 4.4 (the operations guide, "Tiered topics").
func BenchmarkETATiered(b *testing.B) {
	runETAScenarios(b, "tiered, ", func(rows *[]etaRow) { etaTieredCluster(b, rows) })
}

func etaTieredCluster(b *testing.B, rows *[]etaRow) {
	const topic = "eta-tiered"
	ctx := context.Background()
	e := newETABench(b, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}, Tiered: &kafkatest.TieredOptions{}}, rows, func(c *kafkatest.Cluster) {
		fillWith(b, c, topic, 6, 2, 192<<20, map[string]*string{
			kafka.ConfigRemoteStorageEnable: kadm.StringPtr("true"),
			"segment.bytes":                 kadm.StringPtr(strconv.Itoa(1 << 20)),
			"local.retention.bytes":         kadm.StringPtr(strconv.Itoa(3 << 20)),
		})
		wait, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		local, remote, err := c.WaitTiered(wait, topic, 4<<20)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: %s on its leaders' disks, %s in remote storage", topic, engine.HumanBytes(local), engine.HumanBytes(remote))
	})
	defer e.close()
	load := startLoad(b, e.c.BootstrapServers(), topic, 64<<10)
	defer load.stop()
	opts := etaOptions(50 << 20)
	e.scale("tiered: scale-out 3→5 (default add time)", 5, opts, 0)
	if err := e.c.SetClusterConfig(ctx, kafka.ConfigFollowerFetchLastTieredOffset, "true"); err != nil {
		b.Fatal(err)
	}
	e.scale("tiered: scale-out 5→7 with KIP-1023 (measured add time)", 7, opts, 0)
}

func printETARows(title string, rows []etaRow) {
	fmt.Printf("\nBenchmarkETA, %s\n", title)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tESTIMATED\tACTUAL\tRATIO\tAT A TENTH DONE: RE-ESTIMATE, REAL, OFF\tBREAKDOWN")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%s\n", r.name, r.eta.Total().Round(100*time.Millisecond), r.actual.Round(100*time.Millisecond),
			r.ratio(), r.tenth, r.eta)
	}
	_ = tw.Flush()
}

// printETASummary prints, per scenario, the median ratio over the runs with
// the lowest and highest, and the same of the re-estimate's error at a
// tenth done.
func printETASummary(order []string, results map[string][]etaRow) {
	fmt.Printf("\nBenchmarkETA, every run (target: median ratio 0.80 to 1.25; re-estimate at a tenth within ±15 %%)\n")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRUNS\tRATIO MEDIAN\tLOWEST-HIGHEST\tRE-ESTIMATE OFF MEDIAN\tLOWEST-HIGHEST")
	for _, name := range order {
		rs := results[name]
		var ratios, offs []float64
		for _, r := range rs {
			ratios = append(ratios, r.ratio())
			if r.tenthOK {
				offs = append(offs, r.tenthOff)
			}
		}
		m, lo, hi := spread(ratios)
		line := fmt.Sprintf("%s\t%d\t%.2f\t%.2f-%.2f\t", name, len(rs), m, lo, hi)
		if len(offs) == 0 {
			line += "-\t-"
		} else {
			m, lo, hi := spread(offs)
			line += fmt.Sprintf("%+.0f%% (of %d)\t%+.0f%% to %+.0f%%", m, len(offs), lo, hi)
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}

// spread returns the median, lowest and highest of xs (not empty).
func spread(xs []float64) (median, lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return median, s[0], s[n-1]
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
	// tenth is the re-estimate at a tenth done, as printed; tenthOff its
	// error in percent, where tenthOK.
	tenth    string
	tenthOff float64
	tenthOK  bool
}

func (r etaRow) ratio() float64 { return r.eta.Total().Seconds() / r.actual.Seconds() }

// saveRun writes op's record with when its apply began and returned, as
// JSON in KAFKASCALE_BENCH_SAMPLES (a directory; nothing when unset), one
// file per run: the samples a re-estimate is computed from, to try another
// way of computing it on real runs without making them again.
func saveRun(b *testing.B, name string, op *executor.Operation, start, end time.Time) {
	dir := os.Getenv("KAFKASCALE_BENCH_SAMPLES")
	if dir == "" || op == nil {
		return
	}
	js, err := json.Marshal(recordedRun{Scenario: name, Start: start, End: end, Operation: op})
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.json", fileName(name), start.Unix())), js, 0o644)
	}
	if err != nil {
		b.Error(err)
	}
}

// recordedRun is what saveRun writes.
type recordedRun struct {
	Scenario  string              `json:"scenario"`
	Start     time.Time           `json:"start"`
	End       time.Time           `json:"end"`
	Operation *executor.Operation `json:"operation"`
}

// reEstimateAtATenth is what the apply showed as left (ProgressSample.Shown:
// its re-estimate, or before the pace is known the estimate at the
// throttle) in the first sample with a tenth of the bytes done, against the
// time that was really left then (end is when the apply returned), and how
// far off it was, in percent.
func reEstimateAtATenth(op *executor.Operation, end time.Time) (string, float64, bool) {
	if op == nil || op.Plan == nil || op.Plan.TotalBytes == 0 {
		return "- (no bytes to copy)", 0, false
	}
	for _, s := range op.Samples {
		if s.Phase != executor.PhaseReassign || s.Done*10 < op.Plan.TotalBytes {
			continue
		}
		left := end.Sub(s.At)
		off := 100 * (s.Shown().Seconds()/left.Seconds() - 1)
		how := ""
		if s.Projected <= 0 {
			how = " (at the throttle: no pace yet)"
		}
		return fmt.Sprintf("%s%s, %s, %+.0f%%", s.Shown().Round(100*time.Millisecond), how, left.Round(100*time.Millisecond), off), off, true
	}
	return "- (no sample past a tenth)", 0, false
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
