package executor_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// fakePlacer is the Placer port on a fakeCluster: the view is the fake's
// snapshot, and new partitions join it in sync at once.
type fakePlacer struct {
	f *fakeCluster
	// created is every CreatePartitions call, in order.
	created [][]engine.Partition
	// onCreate runs before each CreatePartitions (to look at the lease).
	onCreate func()
	// held is true between BeginPlacement and Release.
	held     bool
	awaited  []string
	awaitErr error
	// createTopicErr, when set, fails the next CreateTopic once, after
	// onRefuse runs.
	createTopicErr error
	onRefuse       func()
}

type fakePlacement struct {
	p    *fakePlacer
	view engine.Cluster
}

func (p *fakePlacer) BeginPlacement(ctx context.Context) (executor.Placement, error) {
	if p.held {
		return nil, errors.New("placement lock taken twice")
	}
	view, err := p.f.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	p.held = true
	return &fakePlacement{p: p, view: view}, nil
}

func (p *fakePlacer) AwaitPartitionsReady(_ context.Context, topic string, partitions int) error {
	p.awaited = append(p.awaited, fmt.Sprintf("%s=%d", topic, partitions))
	return p.awaitErr
}

func (pl *fakePlacement) View() engine.Cluster { return pl.view }

func (pl *fakePlacement) CreatePartitions(_ context.Context, added map[string][]engine.Partition) error {
	if !pl.p.held {
		return errors.New("CreatePartitions after Release")
	}
	if pl.p.onCreate != nil {
		pl.p.onCreate()
	}
	var all []engine.Partition
	for _, topic := range slices.Sorted(maps.Keys(added)) {
		all = append(all, added[topic]...)
	}
	pl.p.created = append(pl.p.created, all)
	f := pl.p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range all {
		f.parts[key(a.Topic, a.Partition)] = &fakePartition{topic: a.Topic, part: a.Partition, replicas: slices.Clone(a.Replicas),
			isr: slices.Clone(a.Replicas), leader: a.Replicas[0]}
	}
	return nil
}

func (pl *fakePlacement) CreateTopic(ctx context.Context, topic string, parts []engine.Partition, _ map[string]string) error {
	if pl.p.createTopicErr != nil {
		err := pl.p.createTopicErr
		pl.p.createTopicErr = nil
		if pl.p.onRefuse != nil {
			pl.p.onRefuse()
		}
		return err
	}
	return pl.CreatePartitions(ctx, map[string][]engine.Partition{topic: parts})
}

func (pl *fakePlacement) Release() { pl.p.held = false }

// A growth places the new partitions on the least-loaded brokers, at the
// topic's own replication factor, and creates them while holding the
// cluster's operation lease, which it names as the growth of the topic.
func TestGrowPartitions_placesUnderTheLease(t *testing.T) {
	f := newFakeCluster([]string{"a", "b"}, 3)
	f.addTopic("events", 6, 2, 1<<20)
	// A fourth broker joins empty, in rack b.
	f.brokers[4] = &fakeBroker{id: 4, rack: "b", capacity: 1 << 40}
	placer := &fakePlacer{f: f}
	log := &memLeaseLog{}
	var holderAtCreate executor.LeaseHolder
	placer.onCreate = func() {
		h, ok := executor.ReplayLease(log.all()).Holder()
		if !ok || !h.Holding {
			t.Errorf("partitions created without the lease held (holder %+v)", h)
		}
		holderAtCreate = h.Holder
	}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer, Lease: lessee(log, "s", time.Second)}, executor.Settings{})

	res, err := ex.GrowPartitions(context.Background(), executor.GrowRequest{ID: "grow-1", Resource: `kafkascale_topic "events"`, Topic: "events", Partitions: 12})
	if err != nil {
		t.Fatal(err)
	}
	if res.From != 6 || len(res.Added) != 6 {
		t.Fatalf("grew from %d with %d new partitions; want from 6 with 6", res.From, len(res.Added))
	}
	if len(placer.created) != 1 {
		t.Fatalf("%d CreatePartitions calls; want 1", len(placer.created))
	}
	rack := map[int32]string{1: "a", 2: "b", 3: "a", 4: "b"}
	perBroker := map[int32]int{}
	for i, p := range placer.created[0] {
		if p.Topic != "events" || p.Partition != int32(6+i) {
			t.Fatalf("new partition %d is %s p%d; want events p%d", i, p.Topic, p.Partition, 6+i)
		}
		if len(p.Replicas) != 2 || rack[p.Replicas[0]] == rack[p.Replicas[1]] {
			t.Fatalf("events p%d placed on %v; want 2 replicas (the topic's replication factor) in 2 racks", p.Partition, p.Replicas)
		}
		for _, b := range p.Replicas {
			perBroker[b]++
		}
	}
	// The 12 old replicas sit 4 on each of brokers 1-3. Each rack gets one
	// replica of every new partition, 6 per rack; within a rack the
	// least-loaded broker takes the most, so that each broker of a rack
	// ends with as many of the topic's replicas: 7 and 7 in rack a (brokers
	// 1, 3), 5 and 5 in rack b (broker 2 with 4 old, the empty broker 4).
	if want := map[int32]int{1: 3, 2: 1, 3: 3, 4: 5}; fmt.Sprint(perBroker) != fmt.Sprint(want) {
		t.Fatalf("new replicas per broker %v; want %v", perBroker, want)
	}
	if fmt.Sprint(placer.awaited) != "[events=12]" {
		t.Fatalf("awaited %v; want [events=12]", placer.awaited)
	}
	if holderAtCreate.Operation != "grow-1" || holderAtCreate.Resource != `kafkascale_topic "events"` || holderAtCreate.What != "grow topic events to 12 partitions" {
		t.Fatalf("lease held by %+v while creating", holderAtCreate)
	}
	if q := executor.ReplayLease(log.all()).Queue(); len(q) != 0 {
		t.Fatalf("lease not released: %v", q)
	}
}

// A topic that already has the count is left alone, and one with more is
// refused with the shrink rule; neither creates anything.
func TestGrowPartitions_nothingToAddOrShrink(t *testing.T) {
	f := newFakeCluster([]string{"a"}, 3)
	f.addTopic("events", 8, 2, 0)
	placer := &fakePlacer{f: f}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer}, executor.Settings{})

	res, err := ex.GrowPartitions(context.Background(), executor.GrowRequest{ID: "g", Topic: "events", Partitions: 8})
	if err != nil || res.From != 8 || len(res.Added) != 0 {
		t.Fatalf("growth to the same count: %+v, %v; want nothing added", res, err)
	}
	_, err = ex.GrowPartitions(context.Background(), executor.GrowRequest{ID: "g", Topic: "events", Partitions: 5})
	var shrink *engine.ShrinkError
	if !errors.As(err, &shrink) || shrink.Partitions != 8 || shrink.Target != 5 {
		t.Fatalf("growth to fewer partitions: %v; want a ShrinkError from 8 to 5", err)
	}
	if len(placer.created) != 0 || placer.held {
		t.Fatalf("created %v, placement still held %v; want nothing created and the placement released", placer.created, placer.held)
	}
}

// New partitions that do not get ready are reported with what was added:
// Kafka cannot take them back.
func TestGrowPartitions_notReady(t *testing.T) {
	f := newFakeCluster([]string{"a"}, 3)
	f.addTopic("events", 3, 3, 0)
	placer := &fakePlacer{f: f, awaitErr: context.DeadlineExceeded}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer}, executor.Settings{})

	_, err := ex.GrowPartitions(context.Background(), executor.GrowRequest{ID: "g", Topic: "events", Partitions: 4})
	var nr *executor.PartitionsNotReadyError
	if !errors.As(err, &nr) || nr.From != 3 || nr.To != 4 || len(nr.Added) != 1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v; want PartitionsNotReadyError from 3 to 4 with 1 partition added, wrapping the deadline", err)
	}
}

// A Streams expansion grows its topics together: every topic below the
// count in one CreatePartitions request, each placed seeing the ones
// placed before it, under the lease; a topic already at the count is left
// alone, and one above it is not refused.
func TestGrowTogether_oneRequestUnderTheLease(t *testing.T) {
	f := newFakeCluster([]string{"a", "b"}, 4)
	f.addTopic("orders", 4, 2, 0)
	f.addTopic("shop-x-repartition", 4, 2, 0)
	f.addTopic("counts", 8, 2, 0)
	f.addTopic("wide", 12, 2, 0)
	placer := &fakePlacer{f: f}
	log := &memLeaseLog{}
	held := false
	placer.onCreate = func() {
		h, ok := executor.ReplayLease(log.all()).Holder()
		held = ok && h.Holding && h.Holder.Operation == "streams-1"
	}
	ex := executor.New(executor.Deps{Kafka: f, Placer: placer, Lease: lessee(log, "s", time.Second)}, executor.Settings{})
	w := executor.Work{ID: "streams-1", Resource: `kafkascale_streams_app "shop"`, What: "grow the topics of Streams app shop to 8 partitions"}
	if err := ex.GrowTogether(context.Background(), w, []string{"orders", "shop-x-repartition", "counts", "wide"}, 8); err != nil {
		t.Fatal(err)
	}
	if !held {
		t.Error("partitions created without the lease held by streams-1")
	}
	if len(placer.created) != 1 || len(placer.created[0]) != 8 {
		t.Fatalf("CreatePartitions calls %v; want one with 4 new partitions of each of orders and shop-x-repartition", placer.created)
	}
	perBroker := map[int32]int{}
	for _, p := range placer.created[0] {
		if p.Topic != "orders" && p.Topic != "shop-x-repartition" || p.Partition < 4 || p.Partition > 7 {
			t.Errorf("created %s p%d; want only p4-p7 of orders and shop-x-repartition", p.Topic, p.Partition)
		}
		for _, b := range p.Replicas {
			perBroker[b]++
		}
	}
	// 16 new replicas on 4 brokers: placed one after the other, seeing each
	// other, they spread evenly.
	for b := int32(1); b <= 4; b++ {
		if perBroker[b] != 4 {
			t.Fatalf("new replicas per broker %v; want 4 on each", perBroker)
		}
	}
	if fmt.Sprint(placer.awaited) != "[orders=8 shop-x-repartition=8]" {
		t.Fatalf("awaited %v; want [orders=8 shop-x-repartition=8]", placer.awaited)
	}
	if placer.held {
		t.Fatal("placement still held after the growth")
	}
}
