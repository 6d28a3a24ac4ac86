package kafka_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m, nil) }

func sharedCluster(t *testing.T) (*kafkatest.Cluster, *kafka.Client) {
	t.Helper()
	c := kafkatest.Shared(t, kafkatest.Options{Brokers: 3})
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, cl
}

func topicConfig(t *testing.T, c *kafkatest.Cluster, topic, key string) (string, bool) {
	t.Helper()
	rcs, err := c.Admin().DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range rc.Configs {
		if cfg.Key == key && cfg.Value != nil && cfg.Source == 1 { // DYNAMIC_TOPIC_CONFIG
			return *cfg.Value, true
		}
	}
	return "", false
}

// awaitTopicConfig waits until brokers show a config someone else set, as a
// setting made long before the operation would be.
func awaitTopicConfig(t *testing.T, c *kafkatest.Cluster, topic, key, want string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if got, _ := topicConfig(t, c, topic, key); got == want {
			// One broker shows it; give the others the moment KRaft
			// takes to apply it from the metadata log.
			time.Sleep(time.Second)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s %s never became %q", topic, key, want)
}

// The throttle pitfalls of DESIGN.md, on a real broker: APPEND keeps other
// users' entries, our entries are subtracted, and a list we empty is deleted
// rather than left as "".
func TestThrottledReplicasOnRealBroker(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := context.Background()
	if err := cl.CreateTopic(ctx, "thr", map[int32][]int32{0: {1, 2}, 1: {2, 3}}, nil); err != nil {
		t.Fatal(err)
	}
	// Someone else's entry.
	v := "1:2"
	if _, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: kafka.ConfigLeaderThrottledReplicas, Value: &v}}, "thr"); err != nil {
		t.Fatal(err)
	}
	awaitTopicConfig(t, c, "thr", kafka.ConfigLeaderThrottledReplicas, "1:2")
	added, err := cl.AddThrottledReplicas(ctx, []kafka.ThrottledReplicas{{Topic: "thr", Leader: []string{"0:1", "1:2"}, Follower: []string{"0:3"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || !slices.Equal(added[0].Leader, []string{"0:1"}) || !slices.Equal(added[0].Follower, []string{"0:3"}) {
		t.Fatalf("added %+v; want leader [0:1] (1:2 was already there) and follower [0:3]", added)
	}
	// The brokers show an APPEND a moment after the controller takes it.
	awaitTopicConfig(t, c, "thr", kafka.ConfigLeaderThrottledReplicas, "1:2,0:1")
	if err := cl.RemoveThrottledReplicas(ctx, added); err != nil {
		t.Fatal(err)
	}
	if got, ok := topicConfig(t, c, "thr", kafka.ConfigLeaderThrottledReplicas); got != "1:2" || !ok {
		t.Errorf("leader list after SUBTRACT = %q (set %v), want the other user's \"1:2\"", got, ok)
	}
	if got, ok := topicConfig(t, c, "thr", kafka.ConfigFollowerThrottledReplicas); ok {
		t.Errorf("follower list after removing our only entry = %q; want the config deleted, not left empty", got)
	}

	// "*" throttles everything already: APPEND onto it is skipped, and it
	// is never subtracted.
	star := "*"
	if _, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: kafka.ConfigFollowerThrottledReplicas, Value: &star}}, "thr"); err != nil {
		t.Fatal(err)
	}
	awaitTopicConfig(t, c, "thr", kafka.ConfigFollowerThrottledReplicas, "*")
	added, err = cl.AddThrottledReplicas(ctx, []kafka.ThrottledReplicas{{Topic: "thr", Follower: []string{"1:1"}}})
	if err != nil {
		t.Fatalf("APPEND next to *: %v", err)
	}
	if len(added) != 0 {
		t.Errorf("added %+v onto *, want nothing", added)
	}
	if got, _ := topicConfig(t, c, "thr", kafka.ConfigFollowerThrottledReplicas); got != "*" {
		t.Errorf("follower list = %q, want * untouched", got)
	}
}

func TestBrokerThrottleSetAndClear(t *testing.T) {
	_, cl := sharedCluster(t)
	ctx := context.Background()
	if err := cl.SetBrokerThrottle(ctx, []int32{1, 2}, 12345678); err != nil {
		t.Fatal(err)
	}
	// The brokers apply a dynamic config a moment after the controller.
	var rates map[int32][2]int64
	for i := 0; i < 300; i++ {
		var err error
		if rates, err = cl.BrokerThrottles(ctx, []int32{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if rates[1] == [2]int64{12345678, 12345678} && rates[2] == [2]int64{12345678, 12345678} {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rates[1] != [2]int64{12345678, 12345678} || rates[2] != [2]int64{12345678, 12345678} || rates[3] != [2]int64{} {
		t.Errorf("rates %v; want 12345678 on brokers 1 and 2 only", rates)
	}
	if err := cl.ClearBrokerThrottle(ctx, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	rates, err := cl.BrokerThrottles(ctx, []int32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if rates[1] != [2]int64{} || rates[2] != [2]int64{} {
		t.Errorf("rates after clear %v; want none", rates)
	}
}

func TestOperationStoreRoundTrip(t *testing.T) {
	_, cl := sharedCluster(t)
	ctx := context.Background()
	if _, ok, err := cl.GetOperation(ctx, "nothing-here"); err != nil || ok {
		t.Fatalf("GetOperation before the topic exists: ok %v, err %v", ok, err)
	}
	if err := cl.EnsureOperationsTopic(ctx, 3); err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"first", "second"} {
		if err := cl.PutOperation(ctx, "k", []byte(v)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
	}
	if err := cl.PutOperation(ctx, "other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	got, ok, err := cl.GetOperation(ctx, "k")
	if err != nil || !ok || string(got) != "second" {
		t.Fatalf("GetOperation(k) = %q, %v, %v; want the latest value \"second\"", got, ok, err)
	}
	if err := cl.PutOperation(ctx, "k", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := cl.GetOperation(ctx, "k"); err != nil || ok {
		t.Fatalf("after a tombstone: ok %v, err %v; want gone", ok, err)
	}
}

func TestUnregisterUnknownBrokerIsNotAnError(t *testing.T) {
	_, cl := sharedCluster(t)
	if err := cl.UnregisterBroker(context.Background(), 77); err != nil {
		t.Fatalf("unregistering a broker that never existed: %v", err)
	}
}

func TestCreateTopicWithAssignmentPlacesReplicas(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := context.Background()
	want := map[int32][]int32{0: {3, 1}, 1: {1, 2}, 2: {2, 3}}
	if err := cl.CreateTopic(ctx, "placed", want, map[string]string{"retention.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	// The brokers learn of the new topic from the metadata log a moment
	// after the controller creates it.
	md, err := c.Admin().Metadata(ctx, "placed")
	for i := 0; err == nil && len(md.Topics["placed"].Partitions) < len(want) && i < 50; i++ {
		time.Sleep(100 * time.Millisecond)
		md, err = c.Admin().Metadata(ctx, "placed")
	}
	if err != nil {
		t.Fatal(err)
	}
	for p, rs := range want {
		if got := md.Topics["placed"].Partitions[p].Replicas; !slices.Equal(got, rs) {
			t.Errorf("placed p%d replicas %v, want %v", p, got, rs)
		}
	}
	err = cl.CreateTopic(ctx, "gap", map[int32][]int32{0: {1}, 2: {2}}, nil)
	if err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("a partition gap must be refused before any request, got %v", err)
	}
}
