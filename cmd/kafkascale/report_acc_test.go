package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/report"
)

// TestAccReportOfScaleOutInBrowser runs a real scale-out 3 -> 4, writes the
// report of its plan before and of the operation after with the CLI, and
// opens both in headless Chromium: no request leaves the file, no console
// error, one bar group per broker whose numbers are the cluster's after the
// apply, and a timeline whose figures are the operation record's.
func TestAccReportOfScaleOutInBrowser(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
	br := startBrowser(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	servers := "--bootstrap-servers=" + strings.Join(c.BootstrapServers(), ",")
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// 16 MiB on 8 partitions of 3 replicas: the new broker takes 6 of the
	// 24, about 12 MiB copied at 2 MiB/s, a few seconds of samples.
	const throttle = 2 << 20
	if resp, err := c.Admin().CreateTopic(ctx, 8, 3, nil, "load"); err != nil || resp.Err != nil {
		t.Fatalf("creating topic load: %v %v", err, resp.Err)
	}
	if _, err := kafkatest.Fill(ctx, c.BootstrapServers(), "load", 16<<20); err != nil {
		t.Fatal(err)
	}
	awaitInSync(ctx, t, cl, 8)

	dir := t.ArtifactDir()
	t.Logf("report pages and screenshots: %s", dir)
	limits := []string{servers, fmt.Sprintf("--throttle=%d", throttle), "--max-moves-per-broker=2"}
	planPage := filepath.Join(dir, "plan.html")
	runReport(ctx, t, append(limits, "--broker-count=4", "--out="+planPage)...)
	var plan report.Data
	decodeReport(t, runReport(ctx, t, append(limits, "--broker-count=4", "--output=json")...), &plan)

	opts := engine.DefaultOptions()
	opts.ThrottleBytesPerSec, opts.MaxMovesPerBroker = throttle, 2
	store := cl.Operations()
	ex := executor.New(executor.Deps{Kafka: cl.Port(), Scaler: kafkatest.Scaler{C: c}, Store: store},
		executor.Settings{PollInterval: 500 * time.Millisecond, SampleInterval: 500 * time.Millisecond})
	key := executor.ClusterKey(c.ClusterID())
	began := time.Now()
	if _, err := ex.Scale(ctx, executor.ScaleRequest{Key: key, ID: "op-report", TargetBrokerCount: 4, Options: opts, InitialThrottle: throttle}); err != nil {
		t.Fatalf("scale-out: %v", err)
	}
	op, err := store.Load(ctx, key)
	if err != nil || op == nil || op.Phase != executor.PhaseCompleted {
		t.Fatalf("the operation record after the scale-out: %+v, %v", op, err)
	}
	t.Logf("scale-out took %s: %d moves, %d bytes, %d samples", time.Since(began).Round(time.Second), op.Plan.ReplicaMoves, op.Plan.TotalBytes, len(op.Samples))
	opPage := filepath.Join(dir, "operation.html")
	runReport(ctx, t, servers, "--operation=op-report", "--out="+opPage)
	var opData report.Data
	decodeReport(t, runReport(ctx, t, servers, "--operation="+key, "--output=json"), &opData)
	if len(opData.Brokers) != 4 || opData.Timeline == nil || len(opData.Timeline.Samples) != len(op.Samples) {
		t.Fatalf("--output json of the operation: %d brokers, timeline %v; want 4 and the record's %d samples", len(opData.Brokers), opData.Timeline != nil, len(op.Samples))
	}

	snap, err := cl.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := clusterLoads(kafka.EngineCluster(snap))

	planShown := readBrokers(t, br.open(t, planPage))
	checkBarGroups(t, "plan", planShown, plan.Brokers)
	screenshot(t, br, planPage, filepath.Join(dir, "plan.png"))

	tab := br.open(t, opPage)
	opShown := readBrokers(t, tab)
	checkBarGroups(t, "operation", opShown, opData.Brokers)
	checkAfterIsCluster(t, opShown, after)
	checkTimeline(t, tab, op)
	screenshot(t, br, opPage, filepath.Join(dir, "operation.png"))
}

// runReport runs `kafkascale report` in this process and returns its
// stdout.
func runReport(ctx context.Context, t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRootCommand(&out, &errb)
	root.SetArgs(append([]string{"report"}, args...))
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("kafkascale report %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

func decodeReport(t *testing.T, b []byte, d *report.Data) {
	t.Helper()
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatalf("report --output json: %v\n%s", err, b)
	}
}

// awaitInSync waits until the n partitions of the cluster have a leader
// and a full ISR: the pre-check refuses under-replicated ones.
func awaitInSync(ctx context.Context, t *testing.T, cl *kafka.Client, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		ps, err := cl.Port().Partitions(ctx)
		ready := err == nil && len(ps) >= n
		for _, p := range ps {
			ready = ready && p.Leader >= 0 && len(p.ISR) == len(p.Replicas)
		}
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions not in sync after a minute: %v %+v", err, ps)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// clusterLoads counts what each broker holds in c; internal are the bytes
// of topics starting with __ (the operation log grows as it records).
type brokerLoad struct {
	replicas, leaders int
	bytes, internal   int64
}

func clusterLoads(c engine.Cluster) map[int32]brokerLoad {
	out := map[int32]brokerLoad{}
	for _, p := range c.Partitions {
		for i, r := range p.Replicas {
			l := out[r]
			l.replicas++
			l.bytes += p.SizeBytes
			if strings.HasPrefix(p.Topic, "__") {
				l.internal += p.SizeBytes
			}
			if i == 0 {
				l.leaders++
			}
			out[r] = l
		}
	}
	return out
}

func screenshot(t *testing.T, br *browser, page, file string) {
	t.Helper()
	tab, cancel := chromedp.NewContext(br.ctx)
	defer cancel()
	if err := chromedp.Do(tab, chromedp.Navigate("file://"+page)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", page, err)
	}
	if err := os.WriteFile(file, png, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", file, len(png))
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
