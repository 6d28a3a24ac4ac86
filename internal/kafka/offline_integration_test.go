package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// A broker that is down stays in both views the engine plans from, the
// planning snapshot and topic placement, marked not alive, with its rack:
// a plan made while it is down no longer fails on "replica on unknown
// broker", and removing it plans.
func TestOfflineBrokerStaysInTheEngineViews(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 4, Racks: []string{"a", "b", "c"}})
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := context.Background()
	resp, err := c.Admin().CreateTopic(ctx, 8, 3, nil, "t")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := c.KillBroker(4); err != nil {
		t.Fatal(err)
	}
	// At once, while the controller still lists broker 4 as running: the
	// snapshot waits until it is fenced rather than fail on the broker
	// that refuses connections (soak seed 22, a plan a second after a
	// broker was killed: "no bootstrap server answered").
	began := time.Now()
	snap, err := cl.Snapshot(ctx)
	if err != nil {
		t.Fatalf("snapshot right after broker 4 was killed: %v", err)
	}
	t.Logf("snapshot right after the kill took %v", time.Since(began).Round(100*time.Millisecond))
	ec := kafka.EngineCluster(snap)
	var b4 *engine.Broker
	for i := range ec.Brokers {
		if ec.Brokers[i].ID == 4 {
			b4 = &ec.Brokers[i]
		}
	}
	if b4 == nil || b4.Alive || b4.Rack != "a" {
		t.Fatalf("broker 4 in the planning snapshot: %+v; want it not alive, in rack a", b4)
	}
	l, err := engine.ChooseLeaving(ec, 3, nil, engine.DefaultOptions())
	if err != nil || len(l.Brokers) != 1 || l.Brokers[0] != 4 || l.UnderReplicated == 0 {
		t.Fatalf("choice %+v, %v; want dead broker 4, with partitions to heal", l, err)
	}
	if _, err := engine.PlanReassignment(ec, engine.Change{RemoveBrokers: l.Brokers}, engine.DefaultOptions()); err != nil {
		t.Fatalf("planning the removal of dead broker 4: %v", err)
	}

	pl, err := cl.BeginPlacement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Release()
	found := false
	for _, b := range pl.Cluster.Brokers {
		if b.ID == 4 {
			found = !b.Alive
		}
	}
	if !found {
		t.Fatalf("placement view %+v: want broker 4, not alive", pl.Cluster.Brokers)
	}
}
