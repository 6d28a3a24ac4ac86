package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// With KIP-1023 on, a tiered partition idle for longer than its local
// retention stops a new replica on Kafka 4.4: its leader has every segment
// in remote storage and no earliest pending upload offset to give, and the
// follower retries until a record is written. Found by the tiered
// scale-out acceptance test, whose moves of a stopped producer's topic
// waited minutes. This test pins the behaviour on the real broker (if a
// Kafka release lets the follower start, it fails, and the plan's warning
// can go), and checks that the snapshot flags exactly the idle partitions
// and that a plan moving one says so.
func TestIdleTieredPartitionHoldsANewReplica(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"},
		Tiered: &kafkatest.TieredOptions{FollowerFetchLastTieredOffset: true}})
	ctx := t.Context()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := c.Admin()
	cfg := map[string]*string{kafka.ConfigRemoteStorageEnable: kadm.StringPtr("true"), "segment.ms": kadm.StringPtr("2000"), "local.retention.ms": kadm.StringPtr("1000")}
	for _, topic := range []string{"idle", "busy"} {
		if r, err := adm.CreateTopic(ctx, 3, 2, cfg, topic); err != nil || r.Err != nil {
			t.Fatalf("creating %s: %v %v", topic, err, r.Err)
		}
	}
	pr, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pr.Close)
	write := func(topic string, p int32) error {
		return pr.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x")}).FirstErr()
	}
	// Both topics get a few seconds of records; then busy keeps getting
	// one every 100 ms and idle nothing.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for p := int32(0); p < 3; p++ {
			if err := errors.Join(write("idle", p), write("busy", p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	busyCtx, stopBusy := context.WithCancel(ctx)
	busyDone := make(chan struct{})
	go func() {
		defer close(busyDone)
		for p := int32(0); busyCtx.Err() == nil; p = (p + 1) % 3 {
			_ = pr.ProduceSync(busyCtx, &kgo.Record{Topic: "busy", Partition: p, Value: []byte("x")}).FirstErr()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	defer func() { stopBusy(); <-busyDone }()

	// The snapshot flags idle's three partitions once their last segment
	// is tiered and deleted locally, and never busy's.
	var snap kafka.Snapshot
	flagged := func() (idle, busy []int32) {
		for _, p := range snap.Partitions {
			if p.PendingUploadUnknown && p.Topic == "idle" {
				idle = append(idle, p.Partition)
			}
			if p.PendingUploadUnknown && p.Topic == "busy" {
				busy = append(busy, p.Partition)
			}
		}
		return idle, busy
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		if snap, err = cl.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		if idle, _ := flagged(); len(idle) == 3 {
			break
		}
		if time.Now().After(deadline) {
			idle, _ := flagged()
			t.Fatalf("after 90 s idle, the snapshot flags idle partitions %v, want all 3", idle)
		}
	}
	if _, busy := flagged(); len(busy) > 0 {
		t.Errorf("the snapshot flags busy partitions %v, which are written every 100 ms", busy)
	}

	// A plan that moves idle partitions says so.
	pv, err := executor.PreviewScaleFrom(kafka.EngineCluster(snap), nil, 4, nil, executor.BalanceNone, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	moved := engine.PendingUploadUnknownMoves(kafka.EngineCluster(snap), pv.Plan)
	for _, m := range pv.Plan.Moves() {
		if m.Topic == "idle" && len(m.Adding) > 0 && !slices.Contains(moved, fmt.Sprintf("idle-%d", m.Partition)) {
			t.Errorf("the 3 -> 4 plan gives idle-%d a new replica but does not list it: %v", m.Partition, moved)
		}
	}
	if (len(moved) > 0) != (pv.PendingUpload != "") {
		t.Errorf("the plan moves %v but its note is %q", moved, pv.PendingUpload)
	}
	t.Logf("the 3 -> 4 plan: %d moves, of which idle partitions %v; note: %s", pv.Plan.ReplicaMoves, moved, pv.PendingUpload)

	// On the broker: a third replica of idle-0 does not join the ISR while
	// the partition stays idle, and does once a record is written.
	var p0 kadm.PartitionDetail
	md, err := adm.Metadata(ctx, "idle")
	if err == nil {
		p0 = md.Topics["idle"].Partitions[0]
	}
	var third int32
	for _, b := range []int32{1, 2, 3} {
		if !slices.Contains(p0.Replicas, b) {
			third = b
		}
	}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("idle", 0, append(slices.Clone(p0.Replicas), third))
	if _, err := adm.AlterPartitionAssignments(ctx, req); err != nil {
		t.Fatal(err)
	}
	inISR := func() bool {
		md, err := adm.Metadata(ctx, "idle")
		return err == nil && slices.Contains(md.Topics["idle"].Partitions[0].ISR, third)
	}
	for until := time.Now().Add(20 * time.Second); time.Now().Before(until); time.Sleep(500 * time.Millisecond) {
		if inISR() {
			t.Fatalf("broker %d's new replica of idle idle-0 joined the ISR: Kafka now starts it, and the plan's warning is wrong", third)
		}
	}
	if err := write("idle", 0); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); !inISR(); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("broker %d's new replica of idle-0 did not join the ISR within 60 s of a write", third)
		}
	}
}
