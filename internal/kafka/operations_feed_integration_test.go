package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// The feed tells a missing operations topic apart (the store's List does
// not), reads only what is new on each poll, forgets tombstoned keys; and
// ReplicaSizes reads a replica's log size on its broker. A cluster of its
// own: the shared one's operations topic holds other tests' records.
func TestOperationFeedAndReplicaSizes(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 1})
	ctx := context.Background()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	feed := cl.FollowOperations()
	if _, err := feed.Poll(ctx); !errors.Is(err, kafka.ErrNoOperationsTopic) {
		t.Fatalf("Poll before the topic exists: %v, want ErrNoOperationsTopic", err)
	}
	store := cl.Operations()
	if ops, err := store.List(ctx); err != nil || len(ops) != 0 {
		t.Fatalf("List before the topic exists: %v, %v; want none", ops, err)
	}
	for _, op := range []*executor.Operation{{Key: "a", ID: "op-a", Phase: executor.PhaseReassign}, {Key: "b", ID: "op-b", Phase: executor.PhaseCompleted}} {
		if err := store.Save(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	ops, err := feed.Poll(ctx)
	if err != nil || len(ops) != 2 || ops[0].ID != "op-a" || ops[1].ID != "op-b" {
		t.Fatalf("first poll: %v, %v", ops, err)
	}
	if err := store.Save(ctx, &executor.Operation{Key: "a", ID: "op-a", Phase: executor.PhaseCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := cl.PutOperation(ctx, "b", nil); err != nil {
		t.Fatal(err)
	}
	ops, err = feed.Poll(ctx)
	if err != nil || len(ops) != 1 || ops[0].ID != "op-a" || ops[0].Phase != executor.PhaseCompleted {
		t.Fatalf("second poll: %+v, %v; want op-a completed alone", ops, err)
	}
	if ops, err := feed.Poll(ctx); err != nil || len(ops) != 1 || ops[0].Phase != executor.PhaseCompleted {
		t.Fatalf("a poll with nothing new: %+v, %v", ops, err)
	}

	// Loads read only what is new since the client's last read: a record
	// written by another client is seen, and a topic deleted and made
	// again (its end now behind what was read) is read from its start.
	if got, ok, err := cl.GetOperation(ctx, "a"); err != nil || !ok || len(got) == 0 {
		t.Fatalf("GetOperation(a) = %d bytes, %v, %v; want op-a", len(got), ok, err)
	}
	other, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.PutOperation(ctx, "c", []byte("from another client")); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := cl.GetOperation(ctx, "c"); err != nil || !ok || string(got) != "from another client" {
		t.Fatalf("GetOperation(c) after another client wrote it = %q, %v, %v", got, ok, err)
	}
	if _, err := c.Admin().DeleteTopics(ctx, kafka.OperationsTopic); err != nil {
		t.Fatal(err)
	}
	// The deletion finishes in the background: ask until the topic can be
	// made and written again, each time with a new client (a producer that
	// wrote to the old topic keeps its topic id for a while).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		w, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers(), RequestTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		err = w.EnsureOperationsTopic(ctx, 1)
		if err == nil {
			err = w.PutOperation(ctx, "d", []byte("after the topic was made again"))
		}
		w.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("making %s again: %v", kafka.OperationsTopic, err)
		}
	}
	if got, ok, err := cl.GetOperation(ctx, "d"); err != nil || !ok || string(got) != "after the topic was made again" {
		t.Fatalf("GetOperation(d) after the topic was made again = %q, %v, %v", got, ok, err)
	}
	if _, ok, err := cl.GetOperation(ctx, "a"); err != nil || ok {
		t.Fatalf("GetOperation(a) after the topic was made again: ok %v, err %v; want gone", ok, err)
	}
	if ops, err := cl.ListOperations(ctx); err != nil || len(ops) != 1 {
		t.Fatalf("ListOperations after the topic was made again = %v, %v; want d alone", ops, err)
	}

	if resp, err := c.Admin().CreateTopic(ctx, 1, 1, nil, "sized"); err != nil || resp.Err != nil {
		t.Fatalf("creating topic sized: %v %v", err, resp.Err)
	}
	if _, err := kafkatest.Fill(ctx, c.BootstrapServers(), "sized", 1<<20); err != nil {
		t.Fatal(err)
	}
	id := c.Brokers()[0].ID
	here, elsewhere := executor.Replica{Topic: "sized", Partition: 0, Broker: id}, executor.Replica{Topic: "sized", Partition: 0, Broker: id + 50}
	sizes, err := cl.Port().ReplicaSizes(ctx, []executor.Replica{here, elsewhere})
	if err != nil || sizes[here] < 1<<20 || len(sizes) != 1 {
		t.Fatalf("ReplicaSizes = %v, %v; want %v at least 1 MiB and nothing else", sizes, err, here)
	}
}
