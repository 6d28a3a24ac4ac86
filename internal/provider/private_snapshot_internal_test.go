package provider

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// memPrivate is a resource's private state, as the framework keeps it.
type memPrivate map[string][]byte

func (m memPrivate) GetKey(_ context.Context, key string) ([]byte, diag.Diagnostics) {
	return m[key], nil
}

func (m memPrivate) SetKey(_ context.Context, key string, v []byte) diag.Diagnostics {
	if !json.Valid(v) {
		return diag.Diagnostics{diag.NewErrorDiagnostic("not JSON", key)}
	}
	m[key] = append([]byte(nil), v...)
	return nil
}

// testCluster is brokers brokers holding partitions partitions at RF 3,
// round-robin, of varied sizes.
func testCluster(brokers, partitions int) engine.Cluster {
	var c engine.Cluster
	for b := 0; b < brokers; b++ {
		c.Brokers = append(c.Brokers, engine.Broker{ID: int32(b + 1), Rack: fmt.Sprintf("r%d", b%3), CapacityBytes: 1 << 40, UsedBytes: 1 << 30, Alive: true})
	}
	for p := 0; p < partitions; p++ {
		c.Partitions = append(c.Partitions, engine.Partition{
			Topic: fmt.Sprintf("topic-%05d", p/50), Partition: int32(p % 50),
			Replicas:  []int32{int32(p%brokers + 1), int32((p+1)%brokers + 1), int32((p+2)%brokers + 1)},
			SizeBytes: int64(p%997) * 1_048_573,
		})
	}
	return c
}

// oldPlanningSnapshot is the value every version before the summary wrote,
// whatever the cluster's size.
func oldPlanningSnapshot(t *testing.T, c engine.Cluster) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(c); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	v, err := json.Marshal(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A small cluster keeps its whole snapshot, read back exactly, and the
// same cluster always writes the same bytes.
func TestPlanningSnapshotSmallKeptWhole(t *testing.T) {
	ctx := context.Background()
	c := testCluster(6, 2000)
	p := memPrivate{}
	if d := savePlanningSnapshot(ctx, p, c, nil); d.HasError() {
		t.Fatal(d)
	}
	first := p[planningSnapshotKey]
	v, d := loadPlanningSnapshot(ctx, p)
	if d.HasError() || !v.Full || v.Summary != nil {
		t.Fatalf("want the whole snapshot, got full=%v summary=%v %v", v.Full, v.Summary, d)
	}
	if !reflect.DeepEqual(v.Cluster, c) {
		t.Fatal("the snapshot read back differs from the one saved")
	}
	if d := savePlanningSnapshot(ctx, p, c, nil); d.HasError() || !bytes.Equal(first, p[planningSnapshotKey]) {
		t.Fatal("saving the same cluster twice wrote different bytes")
	}
}

// A state written before the summary existed holds the whole snapshot of
// a large cluster: it is still read, whole, and the next refresh replaces
// it with a summary under 100 bytes.
func TestPlanningSnapshotOldLargeReadAndReplaced(t *testing.T) {
	ctx := context.Background()
	c := testCluster(30, 150_000)
	p := memPrivate{planningSnapshotKey: oldPlanningSnapshot(t, c)}
	oldSize := len(p[planningSnapshotKey])
	if oldSize <= executor.MaxSnapshotGzipBytes {
		t.Fatalf("the old snapshot of 150,000 partitions is %d bytes: not large enough to test the bound", oldSize)
	}
	v, d := loadPlanningSnapshot(ctx, p)
	if d.HasError() || !v.Full || !reflect.DeepEqual(v.Cluster, c) {
		t.Fatalf("the old large snapshot was not read back whole (full=%v, %v)", v.Full, d)
	}

	opts := engine.DefaultOptions()
	if d := savePlanningSnapshot(ctx, p, v.Cluster, &opts); d.HasError() {
		t.Fatal(d)
	}
	raw := p[planningSnapshotKey]
	if len(raw) >= 100 {
		t.Fatalf("the summary is %d bytes (%s), want under 100", len(raw), raw)
	}
	t.Logf("private state: %d bytes before, %d after: %s", oldSize, len(raw), raw)
	v, d = loadPlanningSnapshot(ctx, p)
	if d.HasError() || v.Full || v.Summary == nil {
		t.Fatalf("want a summary, got full=%v summary=%v %v", v.Full, v.Summary, d)
	}
	s := *v.Summary
	if s.Brokers != 30 || s.Partitions != 150_000 || s.Replicas != 450_000 {
		t.Errorf("summary counts %+v, want 30 brokers, 150000 partitions, 450000 replicas", s)
	}
	if s != summaryOf(t, c, &opts) {
		t.Error("the same cluster summarised twice differs")
	}

	// The keep_balanced answer counts for the options it was given for,
	// and for no others.
	want, _, err := engine.OutOfBalance(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, known, err := v.OutOfBalance(opts, executor.BalanceAll)
	if err != nil || !known || out != (len(want) > 0) {
		t.Errorf("outOfBalance with the recorded options = %v, %v, %v; want %v, known", out, known, err, len(want) > 0)
	}
	other := opts
	other.MaxDiskSkewPercent = 3
	if _, known, _ := v.OutOfBalance(other, executor.BalanceAll); known {
		t.Error("a summary answered for options it was not given")
	}

	// Another assignment has another digest.
	moved := testCluster(30, 150_000)
	moved.Partitions[123_456].Replicas[0], moved.Partitions[123_456].Replicas[1] = moved.Partitions[123_456].Replicas[1], moved.Partitions[123_456].Replicas[0]
	if summaryOf(t, moved, nil).Digest == s.Digest {
		t.Error("a reordered replica list left the digest unchanged")
	}
}

func summaryOf(t *testing.T, c engine.Cluster, o *engine.Options) executor.PlanningSummary {
	t.Helper()
	raw, err := executor.EncodePlanningSnapshot(c, o)
	if err != nil {
		t.Fatal(err)
	}
	var s executor.PlanningSummary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return s
}

// Nothing kept, or something unreadable, is nothing to plan from: the
// plan cannot say whether the cluster is balanced.
func TestPlanningSnapshotUnreadable(t *testing.T) {
	ctx := context.Background()
	for _, raw := range []string{"", `"bm90IGd6aXA="`, `{"b":3}`, `"H4sIAAAAAAAA"`} {
		p := memPrivate{}
		if raw != "" {
			p[planningSnapshotKey] = []byte(raw)
		}
		v, d := loadPlanningSnapshot(ctx, p)
		if d.HasError() || v.Full || v.Summary != nil {
			t.Errorf("%q: got full=%v summary=%v %v", raw, v.Full, v.Summary, d)
		}
		if _, known, _ := v.OutOfBalance(engine.DefaultOptions(), executor.BalanceAll); known {
			t.Errorf("%q: outOfBalance claims to know", raw)
		}
	}
}
