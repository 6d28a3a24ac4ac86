package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
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

// The pitfalls of the throttled-replica lists, on a real broker: APPEND
// keeps other users' entries, our entries are subtracted, and a list we
// empty is deleted rather than left as "" (which throttles nothing, yet
// shows in every describe of the topic), and "*" is left alone.
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

// The executor releases a group's throttles piece by piece as its moves
// finish, in calls a few milliseconds apart. Each call computes what to
// subtract from the lists it reads; read from a broker that had not yet
// applied the call before, a list shows entries already gone, the
// subtraction is chosen over a delete, and Kafka keeps "" (CI saw it on a
// 5,000-partition scale-out). However many rounds, every broker must end
// with no list on the topic.
func TestThrottledReplicasReleasedPieceByPiece(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := context.Background()
	assignment := map[int32][]int32{}
	var leader, follower []string
	for p := int32(0); p < 9; p++ {
		assignment[p] = []int32{p%3 + 1, (p+1)%3 + 1}
		leader = append(leader, kafka.ReplicaEntry(p, p%3+1))
		follower = append(follower, kafka.ReplicaEntry(p, (p+2)%3+1))
	}
	if err := cl.CreateTopic(ctx, "pieces", assignment, nil); err != nil {
		t.Fatal(err)
	}
	const rounds = 15
	for round := range rounds {
		added, err := cl.AddThrottledReplicas(ctx, []kafka.ThrottledReplicas{{Topic: "pieces", Leader: leader, Follower: follower}})
		if err != nil {
			t.Fatal(err)
		}
		if len(added) != 1 || len(added[0].Leader) != len(leader) || len(added[0].Follower) != len(follower) {
			t.Fatalf("round %d: added %+v, want every entry (the last round removed them all)", round, added)
		}
		for piece := range 3 {
			part := kafka.ThrottledReplicas{Topic: "pieces", Leader: leader[3*piece : 3*piece+3], Follower: follower[3*piece : 3*piece+3]}
			if err := cl.RemoveThrottledReplicas(ctx, []kafka.ThrottledReplicas{part}); err != nil {
				t.Fatalf("round %d, piece %d: %v", round, piece, err)
			}
		}
	}
	// An empty list someone else left (or an older release did) throttles
	// nothing: touching the topic's throttles deletes it too.
	empty := ""
	if _, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: kafka.ConfigFollowerThrottledReplicas, Value: &empty}}, "pieces"); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, ok := topicConfig(t, c, "pieces", kafka.ConfigFollowerThrottledReplicas); ok {
			break
		}
		if i == 100 {
			t.Fatal("the empty follower list never showed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // the other brokers too
	added, err := cl.AddThrottledReplicas(ctx, []kafka.ThrottledReplicas{{Topic: "pieces", Leader: leader[:1]}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.RemoveThrottledReplicas(ctx, added); err != nil {
		t.Fatal(err)
	}
	// Every broker applies the last delete a moment after the controller.
	var left []string
	for range 100 {
		left = nil
		for _, b := range []int32{1, 2, 3} {
			for _, key := range []string{kafka.ConfigLeaderThrottledReplicas, kafka.ConfigFollowerThrottledReplicas} {
				if v, ok := brokerTopicConfig(t, c, b, "pieces", key); ok {
					left = append(left, fmt.Sprintf("broker %d shows %s=%q", b, key, v))
				}
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("after %d rounds of add then remove in 3 pieces, and a round next to an empty list: %s; want no list left", rounds, strings.Join(left, "; "))
}

// A removal retried after its answer was lost finds its entries gone, and
// an APPEND that never took left none: removing them again must neither
// wait for them to show (which they never will) nor touch anyone else's.
func TestRemovingThrottledReplicasAgainIsNoChange(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := context.Background()
	// A topic of its own each run, so that -count repeats it.
	topic := fmt.Sprintf("again-%d", time.Now().UnixNano())
	if err := cl.CreateTopic(ctx, topic, map[int32][]int32{0: {1, 2}, 1: {2, 3}}, nil); err != nil {
		t.Fatal(err)
	}
	foreign := "1:3" // someone else's entry
	if _, err := c.Admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: kafka.ConfigLeaderThrottledReplicas, Value: &foreign}}, topic); err != nil {
		t.Fatal(err)
	}
	ours := []kafka.ThrottledReplicas{{Topic: topic, Leader: []string{"0:1"}, Follower: []string{"0:3"}}}
	added, err := cl.AddThrottledReplicas(ctx, ours)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.RemoveThrottledReplicas(ctx, added); err != nil {
		t.Fatal(err)
	}
	// Well under the two minutes a wait for the entries to show would take.
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := cl.RemoveThrottledReplicas(rctx, added); err != nil {
		t.Fatalf("removing the same entries again: %v", err)
	}
	never := []kafka.ThrottledReplicas{{Topic: topic, Leader: []string{"1:2"}, Follower: []string{"1:1"}}}
	if err := cl.RemoveThrottledReplicas(rctx, never); err != nil {
		t.Fatalf("removing entries that were never added: %v", err)
	}
	// Every broker applies the last change a moment after the controller.
	var wrong []string
	for range 100 {
		wrong = nil
		for _, b := range []int32{1, 2, 3} {
			leader, _ := brokerTopicConfig(t, c, b, topic, kafka.ConfigLeaderThrottledReplicas)
			follower, set := brokerTopicConfig(t, c, b, topic, kafka.ConfigFollowerThrottledReplicas)
			if leader != foreign || set {
				wrong = append(wrong, fmt.Sprintf("broker %d shows leader list %q and follower list %q (set %v)", b, leader, follower, set))
			}
		}
		if len(wrong) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("%s; want leader list %q and no follower list", strings.Join(wrong, "; "), foreign)
}

// brokerTopicConfig reads one of a topic's own configs from one broker.
func brokerTopicConfig(t *testing.T, c *kafkatest.Cluster, broker int32, topic, key string) (string, bool) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = kmsg.ConfigResourceTypeTopic
	r.ResourceName = topic
	r.ConfigNames = []string{key}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), c.Client().Broker(int(broker)))
	if err != nil {
		t.Fatalf("describing topic %s on broker %d: %v", topic, broker, err)
	}
	for _, rr := range resp.Resources {
		if err := kerr.ErrorForCode(rr.ErrorCode); err != nil {
			t.Fatalf("describing topic %s on broker %d: %v", topic, broker, err)
		}
		for _, cfg := range rr.Configs {
			if cfg.Name == key && cfg.Source == kmsg.ConfigSourceDynamicTopicConfig && cfg.Value != nil {
				return *cfg.Value, true
			}
		}
	}
	return "", false
}

// Cancelling a reassignment that finished after it was listed is not an
// error: Kafka answers NO_REASSIGNMENT_IN_PROGRESS, and the partition is not
// moving, which is what the cancel wanted.
func TestCancelOfAFinishedReassignmentIsNotAnError(t *testing.T) {
	_, cl := sharedCluster(t)
	ctx := context.Background()
	if err := cl.CreateTopic(ctx, "settled", map[int32][]int32{0: {1, 2}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.AwaitTopicReady(ctx, "settled", 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := cl.CancelReassignments(ctx, []kafka.Assignment{{Topic: "settled", Partition: 0}}); err != nil {
		t.Fatalf("cancelling a partition that is not reassigning: %v", err)
	}
	// Other refusals still count: a partition that does not exist.
	if err := cl.CancelReassignments(ctx, []kafka.Assignment{{Topic: "settled", Partition: 7}}); err == nil {
		t.Fatal("cancelling partition 7 of a one-partition topic: no error")
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

// The port hands the executor the entries it is about to add before it
// adds them, so that they are recorded first; when the record fails,
// nothing is added.
func TestThrottleReplicasRecordsBeforeAdding(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := context.Background()
	if err := cl.CreateTopic(ctx, "thr-rec", map[int32][]int32{0: {1, 2}}, nil); err != nil {
		t.Fatal(err)
	}
	want := []executor.ThrottledReplicas{{Topic: "thr-rec", Leader: []string{"0:1", "0:2"}, Follower: []string{"0:3"}}}
	refused := errors.New("the record could not be saved")
	err := cl.Port().ThrottleReplicas(ctx, want, func([]executor.ThrottledReplicas) error { return refused })
	if !errors.Is(err, refused) {
		t.Fatalf("ThrottleReplicas with a failing record: %v; want its error", err)
	}
	if got, ok := topicConfig(t, c, "thr-rec", kafka.ConfigLeaderThrottledReplicas); ok {
		t.Fatalf("leader list = %q after a failed record; want nothing added", got)
	}
	var recorded []executor.ThrottledReplicas
	if err := cl.Port().ThrottleReplicas(ctx, want, func(adding []executor.ThrottledReplicas) error {
		// Not on the topic yet.
		if got, ok := topicConfig(t, c, "thr-rec", kafka.ConfigLeaderThrottledReplicas); ok {
			t.Errorf("leader list = %q while the entries were being recorded; want them added after", got)
		}
		recorded = adding
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(recorded) != fmt.Sprint(want) {
		t.Fatalf("recorded %v; want %v", recorded, want)
	}
	awaitTopicConfig(t, c, "thr-rec", kafka.ConfigLeaderThrottledReplicas, "0:1,0:2")
	awaitTopicConfig(t, c, "thr-rec", kafka.ConfigFollowerThrottledReplicas, "0:3")
}

// A topic deleted after it was throttled took its lists with it: removing
// its entries is done, not an error, and the other topics of the same
// removal still lose theirs (the soak, seed 25: a topic destroyed from
// another working directory while an operation that moved it was stopped
// failed every later apply of that operation on UNKNOWN_TOPIC_OR_PARTITION).
func TestRemovingThrottledReplicasOfADeletedTopic(t *testing.T) {
	c, cl := sharedCluster(t)
	ctx := context.Background()
	suffix := time.Now().UnixNano()
	gone, kept := fmt.Sprintf("gone-%d", suffix), fmt.Sprintf("kept-%d", suffix)
	for _, topic := range []string{gone, kept} {
		if err := cl.CreateTopic(ctx, topic, map[int32][]int32{0: {1, 2}, 1: {2, 3}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = cl.DeleteTopic(context.Background(), kept) })
	added, err := cl.AddThrottledReplicas(ctx, []kafka.ThrottledReplicas{
		{Topic: gone, Leader: []string{"0:1"}, Follower: []string{"0:3"}},
		{Topic: kept, Leader: []string{"1:2"}, Follower: []string{"1:1"}},
	})
	if err != nil || len(added) != 2 {
		t.Fatalf("throttling both topics: %v, added %+v", err, added)
	}
	if err := cl.DeleteTopic(ctx, gone); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.RemoveThrottledReplicas(rctx, added); err != nil {
		t.Fatalf("removing the throttles of a deleted topic and of a live one: %v", err)
	}
	for _, key := range []string{kafka.ConfigLeaderThrottledReplicas, kafka.ConfigFollowerThrottledReplicas} {
		if v, ok := topicConfig(t, c, kept, key); ok {
			t.Errorf("topic %s still has %s=%q after the removal", kept, key, v)
		}
	}
}

// A broker the controller lists as running but that refuses connections is
// either stopping, and soon fenced, or starting: Kafka opens a broker's
// listeners only after the controller unfences it. The read waits for
// either, not for a fence that never comes to a starting broker (the soak,
// seed 23: a refresh just as the platform added a broker waited 30 s and
// failed). Broker 1 runs throughout; the address is a port of the test's
// that refuses, then listens.
func TestReadWaitsForAStartingBrokersListener(t *testing.T) {
	_, cl := sharedCluster(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	// Never listening: the wait ends with its context, in error.
	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := kafka.AwaitFencedOrListening(short, cl, 1, addr); err == nil {
		t.Fatal("the wait on a running broker that never listens returned no error")
	}

	// Listening after a moment: the wait returns, well before Kafka
	// would fence a broker (never, here) or the context ends.
	go func() {
		time.Sleep(time.Second)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return
		}
		t.Cleanup(func() { _ = ln.Close() })
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	if err := kafka.AwaitFencedOrListening(ctx, cl, 1, addr); err != nil {
		t.Fatalf("the wait on a broker that starts listening: %v", err)
	}
}
