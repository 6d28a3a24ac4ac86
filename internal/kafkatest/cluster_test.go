package kafkatest_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

func TestPomPinsKafkaVersion(t *testing.T) {
	pom, err := kafkatest.PomPath()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(pom)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(raw)
	if m == nil || string(m[1]) != kafkatest.KafkaVersion {
		t.Fatalf("%s pins Kafka %q, kafkatest.KafkaVersion is %q", pom, m, kafkatest.KafkaVersion)
	}
}

// Every release the tests run resolves from the one pom into its own cache
// directory, with its own version's jars.
func TestEnsureKafkaIsCached(t *testing.T) {
	for _, v := range kafkatest.KafkaVersions {
		libs, err := kafkatest.EnsureKafkaVersion(t.Context(), v)
		if err != nil {
			t.Fatal(err)
		}
		if got := filepath.Base(filepath.Dir(libs)); got != "kafka-"+v {
			t.Errorf("Kafka %s is cached in %s, want a directory of its own (kafka-%s)", v, libs, v)
		}
		for _, jar := range []string{"kafka_2.13-" + v + ".jar", "kafka-tools-" + v + ".jar", "kafka-clients-" + v + ".jar"} {
			if _, err := os.Stat(filepath.Join(libs, jar)); err != nil {
				t.Errorf("EnsureKafkaVersion(%s) returned %s without %s: %v", v, libs, jar, err)
			}
		}
		// The binding must match slf4j-api's major version, or every node
		// logs to the NOP logger and server.log stays empty.
		jars, _ := filepath.Glob(filepath.Join(libs, "slf4j-api-1.*.jar"))
		bind, _ := filepath.Glob(filepath.Join(libs, "log4j-slf4j-impl-*.jar"))
		if len(jars) != 1 || len(bind) != 1 {
			t.Errorf("Kafka %s: want slf4j-api 1.x with log4j-slf4j-impl, got %v and %v", v, jars, bind)
		}
		// No second slf4j binding or log4j 1 implementation: Kafka 3.9's
		// kafka-tools brings slf4j-reload4j and reload4j, and ZooKeeper,
		// which its broker still depends on, logback, unless excluded.
		for _, other := range []string{"slf4j-reload4j-*.jar", "reload4j-*.jar", "logback-classic-*.jar"} {
			if got, _ := filepath.Glob(filepath.Join(libs, other)); len(got) > 0 {
				t.Errorf("Kafka %s: %v would compete with log4j2 for the logging", v, got)
			}
		}
	}
}

// TestCluster runs one cluster through its whole life; the subtests depend
// on each other's order.
func TestCluster(t *testing.T) {
	began := time.Now()
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
	t.Logf("controller + 3 brokers formed and unfenced in %v", time.Since(began).Round(time.Millisecond))
	ctx := t.Context()
	dir := c.Dir()

	t.Run("formed", func(t *testing.T) {
		got := c.Brokers()
		want := []kafkatest.Broker{
			{ID: 1, Rack: "a", Running: true, State: platform.BrokerRunning},
			{ID: 2, Rack: "b", Running: true, State: platform.BrokerRunning},
			{ID: 3, Rack: "c", Running: true, State: platform.BrokerRunning},
		}
		if len(got) != len(want) {
			t.Fatalf("Brokers() = %+v, want ids 1..3", got)
		}
		for i := range want {
			want[i].Addr = got[i].Addr
			if got[i] != want[i] {
				t.Errorf("broker %d = %+v, want %+v", i+1, got[i], want[i])
			}
		}
		addrs := c.BootstrapServers()
		if len(addrs) != 3 || addrs[0] != got[0].Addr || addrs[2] != got[2].Addr {
			t.Errorf("BootstrapServers() = %v, want the three broker listeners", addrs)
		}
		assertView(t, c, map[int32]string{1: "a", 2: "b", 3: "c"})

		md, err := c.Admin().BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if md.Cluster != c.ClusterID() {
			t.Errorf("brokers report cluster id %q, Start formatted %q", md.Cluster, c.ClusterID())
		}

		features, err := kafkatest.FinalizedFeatures(ctx, c.Client())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("finalized features: %v", features)
		if features["streams.version"] < 1 {
			t.Errorf("streams.version = %d, want >= 1: the streams rebalance protocol should be on for a new cluster", features["streams.version"])
		}

		// The cluster does real work: a topic spread over the racks takes
		// a record acknowledged by all replicas.
		if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, "smoke"); err != nil {
			t.Fatal(err)
		}
		if err := c.Client().ProduceSync(ctx, &kgo.Record{Topic: "smoke", Value: []byte("hello")}).FirstErr(); err != nil {
			t.Fatalf("producing with acks=all: %v", err)
		}
	})

	t.Run("add broker", func(t *testing.T) {
		id, err := c.AddBroker(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if id != 4 {
			t.Errorf("AddBroker gave id %d, want 4", id)
		}
		b := c.Brokers()
		if len(b) != 4 || b[3].Rack != "a" || b[3].State != platform.BrokerRunning {
			t.Errorf("after AddBroker, Brokers() = %+v, want broker 4 running in rack a", b)
		}
		assertView(t, c, map[int32]string{1: "a", 2: "b", 3: "c", 4: "a"})
	})

	t.Run("kill and restart", func(t *testing.T) {
		if err := c.KillBroker(2); err != nil {
			t.Fatal(err)
		}
		if b := c.Brokers()[1]; b.Running || b.State != platform.BrokerStopped {
			t.Errorf("after KillBroker(2), broker 2 = %+v, want stopped", b)
		}
		if n := jvmsOf(t, filepath.Join(dir, "broker-2")); n != 0 {
			t.Errorf("%d JVMs of broker 2 survive KillBroker", n)
		}
		if err := c.RestartBroker(ctx, 2); err != nil {
			t.Fatal(err)
		}
		if b := c.Brokers()[1]; !b.Running || b.State != platform.BrokerRunning {
			t.Errorf("after RestartBroker(2), broker 2 = %+v, want running", b)
		}
		assertView(t, c, map[int32]string{1: "a", 2: "b", 3: "c", 4: "a"})
		// Same data dir: its replicas of "smoke" are still there.
		if _, err := os.Stat(filepath.Join(dir, "broker-2", "data", "smoke-0")); err != nil {
			t.Errorf("broker 2 lost its data across the restart: %v", err)
		}
	})

	t.Run("stop and unregister", func(t *testing.T) {
		err := c.UnregisterBroker(ctx, 4)
		if err == nil || !strings.Contains(err.Error(), "refusing") {
			t.Fatalf("UnregisterBroker(4) of a running broker: err = %v, want a refusal", err)
		}
		if err := c.StopBroker(ctx, 4); err != nil {
			t.Fatal(err)
		}
		if b := c.Brokers()[3]; b.ID != 4 || b.Running || b.State != platform.BrokerStopped {
			t.Errorf("after StopBroker(4), broker 4 = %+v, want stopped", b)
		}
		if err := c.UnregisterBroker(ctx, 4); err != nil {
			t.Fatal(err)
		}
		view, err := kafkatest.DescribeCluster(ctx, c.Client())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range view {
			if b.ID == 4 {
				t.Errorf("DescribeCluster (fenced included) still lists broker 4: %+v", view)
			}
		}
		if ids := ids(c.Brokers()); !slices.Equal(ids, []int32{1, 2, 3}) {
			t.Errorf("after unregistering 4, Brokers() ids = %v, want [1 2 3]", ids)
		}
	})

	// Every broker the cluster began with is replaced, as a long soak does:
	// the shared client must still reach the controller through brokers it
	// was not made with.
	t.Run("first brokers replaced", func(t *testing.T) {
		var added []int32
		for range 2 {
			id, err := c.AddBroker(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			added = append(added, id)
		}
		for _, id := range []int32{1, 2, 3} {
			if err := c.StopBroker(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := c.UnregisterBroker(ctx, id); err != nil {
				t.Fatalf("unregistering broker %d once brokers %v run: %v", id, added, err)
			}
		}
		view, err := kafkatest.DescribeCluster(ctx, c.Client())
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		for _, b := range view {
			got = append(got, b.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, added) {
			t.Errorf("DescribeCluster (fenced included) lists brokers %v, want only the added %v", got, added)
		}
	})

	t.Run("stop leaves nothing", func(t *testing.T) {
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		if n := jvmsOf(t, dir); n != 0 {
			t.Errorf("%d JVMs of %s survive Stop", n, dir)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("cluster directory %s survives Stop: %v", dir, err)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
}

// assertView checks Kafka's own view: exactly the brokers in want, with
// their racks, all unfenced, on the listeners Brokers() reports.
func assertView(t *testing.T, c *kafkatest.Cluster, want map[int32]string) {
	t.Helper()
	view, err := kafkatest.DescribeCluster(t.Context(), c.Client())
	if err != nil {
		t.Fatal(err)
	}
	addr := map[int32]string{}
	for _, b := range c.Brokers() {
		addr[b.ID] = b.Addr
	}
	if len(view) != len(want) {
		t.Errorf("DescribeCluster lists %+v, want brokers %v", view, want)
	}
	for _, b := range view {
		rack, ok := want[b.ID]
		switch {
		case !ok:
			t.Errorf("DescribeCluster lists unexpected broker %+v", b)
		case b.Rack != rack:
			t.Errorf("broker %d has rack %q, want %q", b.ID, b.Rack, rack)
		case b.Fenced:
			t.Errorf("broker %d is fenced", b.ID)
		case b.Host+":"+itoa(b.Port) != addr[b.ID]:
			t.Errorf("broker %d registered %s:%d, Brokers() says %s", b.ID, b.Host, b.Port, addr[b.ID])
		}
	}
}

func jvmsOf(t *testing.T, dir string) int {
	t.Helper()
	procs, err := kafkatest.FindNodeProcesses(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(procs)
}

func ids(bs []kafkatest.Broker) []int32 {
	var out []int32
	for _, b := range bs {
		out = append(out, b.ID)
	}
	return out
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// BenchmarkStart measures forming a controller and three brokers until all
// are unfenced, and stopping them. Run with -benchtime=3x: each iteration
// takes seconds.
func BenchmarkStart(b *testing.B) {
	for b.Loop() {
		c, err := kafkatest.Start(context.Background(), kafkatest.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := c.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
