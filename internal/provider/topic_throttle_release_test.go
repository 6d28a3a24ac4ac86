package provider_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// A replication factor change 2 → 3 of four partitions, one holding 4 MiB
// and three empty, runs as one group at 128 KiB/s. The empty partitions'
// moves finish within moments while the full one copies for about 20 s;
// their throttle entries must go as they finish, not when the group does:
// Kafka throttles a listed replica whose last fetch left it behind even in
// the ISR, and acks=all writes to its partition wait for it.
func TestAccTopicResource_finishedMovesLoseTheirThrottle(t *testing.T) {
	testAccPreCheck(t)
	c := startSlowReplicationCluster(t)
	servers := c.BootstrapServers()
	const topic = "mix"
	watch := background(t)
	w := &finishedMoveWatch{topic: topic, replicationFactor: 3, grace: 5 * time.Second}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: topicConfig(servers, topic, 4, 2, ""),
				Check: func(*terraform.State) error {
					fillPartition(t, c, topic, 0, 4<<20)
					return nil
				},
			},
			{
				PreConfig: func() {
					watch(func(stop <-chan struct{}) { w.run(t, c, stop) })
				},
				Config: topicConfig(servers, topic, 4, 3, `throttle = 131072`),
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, topic, 4, 3)
					assertNoThrottles(t, c)
					return w.verdict()
				},
			},
		},
	})
}

// fillPartition writes total bytes to one partition, acknowledged by all
// in-sync replicas.
func fillPartition(t *testing.T, c *kafkatest.Cluster, topic string, partition int32, total int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for n := 0; n < total; n += 16 << 10 {
		value := make([]byte, 16<<10)
		_, _ = rand.Read(value) // incompressible: the bytes on disk are the bytes copied
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: value})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("writing %d bytes to %s p%d: %v", total, topic, partition, err)
	}
}

// finishedMoveWatch follows one topic while an operation copies, and records
// each partition whose move finished (it has replicationFactor replicas and
// no reassignment) but whose throttle entries stayed longer than grace while
// another partition of the topic still copied. A partition counts as
// finished by its replica count, not by having been seen reassigning: an
// empty partition's move can start and end between two polls.
type finishedMoveWatch struct {
	topic             string
	replicationFactor int
	grace             time.Duration

	mu sync.Mutex
	// finishedBeside counts the partitions seen finished while another
	// still copied: without one, the check proves nothing.
	finishedBeside map[int32]bool
	stale          []string
	errs           int
}

func (w *finishedMoveWatch) run(t *testing.T, c *kafkatest.Cluster, stop <-chan struct{}) {
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Errorf("throttle watch: %v", err)
		return
	}
	defer cl.Close()
	w.finishedBeside = map[int32]bool{}
	finishedAt := map[int32]time.Time{}
	reported := map[int32]bool{}
	for {
		select {
		case <-stop:
			return
		case <-time.After(250 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rs, err := cl.ListReassignments(ctx)
		var lists map[string][2]string
		if err == nil {
			lists, err = cl.TopicThrottledReplicas(ctx, []string{w.topic})
		}
		var topics map[string]kafka.TopicDescription
		if err == nil {
			topics, err = cl.DescribeTopics(ctx, []string{w.topic})
		}
		cancel()
		if err != nil {
			w.mu.Lock()
			w.errs++
			w.mu.Unlock()
			continue
		}
		moving := map[int32]bool{}
		for _, r := range rs {
			if r.Topic == w.topic {
				moving[r.Partition] = true
				delete(finishedAt, r.Partition)
			}
		}
		if len(moving) == 0 {
			continue // between groups or done: the group's end clears the rest
		}
		listed := throttledPartitions(lists[w.topic])
		now := time.Now()
		w.mu.Lock()
		for _, ps := range topics[w.topic].Partitions {
			p := ps.Partition
			if moving[p] || len(ps.Adding) > 0 || len(ps.Replicas) != w.replicationFactor {
				continue
			}
			if _, ok := finishedAt[p]; !ok {
				finishedAt[p] = now
			}
			w.finishedBeside[p] = true
			if listed[p] && now.Sub(finishedAt[p]) > w.grace && !reported[p] {
				reported[p] = true
				w.stale = append(w.stale, fmt.Sprintf("%s p%d still throttled %s after its move finished, while p%v copied",
					w.topic, p, now.Sub(finishedAt[p]).Round(time.Millisecond), keys(moving)))
			}
		}
		w.mu.Unlock()
	}
}

func (w *finishedMoveWatch) verdict() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.finishedBeside) == 0 {
		return fmt.Errorf("no move of %s was seen finished while another copied (%d read errors); the check proves nothing", w.topic, w.errs)
	}
	if len(w.stale) > 0 {
		return fmt.Errorf("finished moves kept their throttle: %s", strings.Join(w.stale, "; "))
	}
	return nil
}

// throttledPartitions are the partitions named in a topic's leader and
// follower throttled-replica lists ("p:broker,...").
func throttledPartitions(lists [2]string) map[int32]bool {
	out := map[int32]bool{}
	for _, l := range lists {
		for _, e := range strings.Split(l, ",") {
			p, _, ok := strings.Cut(strings.TrimSpace(e), ":")
			if n, err := strconv.Atoi(p); ok && err == nil {
				out[int32(n)] = true
			}
		}
	}
	return out
}
