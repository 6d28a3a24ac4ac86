package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// mistake is one plausible user mistake and what the user must be told.
type mistake struct {
	name   string
	config string
	// summary is the diagnostic's summary; attr the attribute line Terraform
	// quotes ("broker_count =", "scaling {"), empty when the diagnostic is
	// on no attribute; detail the key phrases of the detail, in order.
	summary string
	attr    string
	detail  []string
	// apply needs an apply: the mistake cannot be seen at plan time.
	apply bool
	// works: the configuration is no mistake after all, and must plan.
	works bool
	// steps, when set, replace the single step built from config.
	steps func(want *regexp.Regexp) []resource.TestStep
	// setup runs before the case, cleanup after its snapshot.
	setup func(t *testing.T)
}

// pattern is the ExpectError of a mistake: summary, then the quoted
// attribute line, then the detail's phrases, each in order.
func (m mistake) pattern() *regexp.Regexp {
	parts := []string{regexp.QuoteMeta(m.summary)}
	if m.attr != "" {
		parts = append(parts, `\d+: `+regexp.QuoteMeta(m.attr))
	}
	for _, d := range m.detail {
		parts = append(parts, regexp.QuoteMeta(d))
	}
	return wrapped("(?s)" + strings.Join(parts, ".*"))
}

// clusterSnapshot is what a refused plan must leave as it was.
type clusterSnapshot struct {
	Brokers       []string
	Replicas      map[string]string // "topic/p" -> replicas
	TopicConfigs  map[string]string // "topic key" -> value, dynamic only
	Throttles     []string
	Reassignments []string
}

func snapshotCluster(t *testing.T, c *kafkatest.Cluster) clusterSnapshot {
	t.Helper()
	ctx := context.Background()
	s := clusterSnapshot{Replicas: map[string]string{}, TopicConfigs: map[string]string{}}
	regs, err := kafkatest.DescribeCluster(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range regs {
		s.Brokers = append(s.Brokers, fmt.Sprintf("%+v", b))
	}
	slices.Sort(s.Brokers)
	md, err := c.Admin().Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, td := range md.Topics {
		if strings.HasPrefix(td.Topic, "__kafkascale_") {
			// kafkascale's own records of operations and leases, which
			// an apply may create before it is refused: no user data.
			continue
		}
		names = append(names, td.Topic)
		for _, p := range td.Partitions {
			s.Replicas[fmt.Sprintf("%s/%d", td.Topic, p.Partition)] = fmt.Sprint(p.Replicas)
		}
	}
	tcs, err := c.Admin().DescribeTopicConfigs(ctx, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range tcs {
		for _, cfg := range rc.Configs {
			if cfg.Source == kmsg.ConfigSourceDynamicTopicConfig {
				s.TopicConfigs[rc.Name+" "+cfg.Key] = cfg.MaybeValue()
			}
		}
	}
	s.Throttles = throttlesSet(t, c)
	for _, r := range reassigning(t, c) {
		s.Reassignments = append(s.Reassignments, fmt.Sprintf("%+v", r))
	}
	return s
}

// diff lists what changed between two snapshots.
func (s clusterSnapshot) diff(after clusterSnapshot) []string {
	var out []string
	if !slices.Equal(s.Brokers, after.Brokers) {
		out = append(out, fmt.Sprintf("brokers %v, then %v", s.Brokers, after.Brokers))
	}
	for _, m := range []struct {
		what          string
		before, after map[string]string
	}{{"replicas", s.Replicas, after.Replicas}, {"topic config", s.TopicConfigs, after.TopicConfigs}} {
		for k, v := range m.before {
			if w, ok := m.after[k]; !ok || w != v {
				out = append(out, fmt.Sprintf("%s %s: %q, then %q", m.what, k, v, w))
			}
		}
		for k, w := range m.after {
			if _, ok := m.before[k]; !ok {
				out = append(out, fmt.Sprintf("%s %s: new, %q", m.what, k, w))
			}
		}
	}
	if !slices.Equal(s.Throttles, after.Throttles) {
		out = append(out, fmt.Sprintf("throttles %v, then %v", s.Throttles, after.Throttles))
	}
	if !slices.Equal(s.Reassignments, after.Reassignments) {
		out = append(out, fmt.Sprintf("reassignments %v, then %v", s.Reassignments, after.Reassignments))
	}
	return out
}

// A user's plausible mistakes, tried against one real 3-broker cluster:
// each is refused, at plan time wherever the information is there, on the
// attribute at fault, with a message that says what is wrong, why and what
// to do; and nothing on the cluster changes.
func TestAccMistakes(t *testing.T) {
	// Alone, and before the Streams tests: it shares their cluster, and
	// the refusals it expects name the fixture topics it creates.
	testAccPreCheck(t)
	c := kafkatest.Shared(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
	c, apiURL := withScalingAPI(t, c)
	servers := c.BootstrapServers()
	provider := testAccProviderConfig(servers, "")
	dead := closedPort(t)

	// The cluster a newcomer brings: topics made outside Terraform.
	createTopicRF(t, c, "mst-rf3", 3, 3)
	createTopicRF(t, c, "mst-exists", 6, 2)
	if _, err := c.Admin().AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("86400000")}}, "mst-exists"); err != nil {
		t.Fatal(err)
	}
	createTopicRF(t, c, "mst_dotted", 1, 1)
	createTopicRF(t, c, "mst-shrink", 6, 1)
	// A Streams app known by its internal topic only, as a stopped app is.
	for _, topic := range []string{"mst-app-in-a", "mst-app-in-b", "mst-app-out", "mst-app-agg-repartition"} {
		createTopicRF(t, c, topic, 6, 1)
	}
	createTopicRF(t, c, "mst-uneven", 4, 1)
	// Metadata reaches every broker a little after the creation: wait
	// until a snapshot sees all their partitions, so that the first case's
	// "before" is complete.
	waitFor(t, "the fixture topics in the metadata", func() bool {
		n := 0
		for k := range snapshotCluster(t, c).Replicas {
			if strings.HasPrefix(k, "mst") {
				n++
			}
		}
		return n == 3+6+1+6+4*6+4
	})

	// A Prometheus URL that answers 200 with a web page.
	notProm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Grafana</body></html>")
	}))
	t.Cleanup(notProm.Close)

	topic := func(body string) string {
		return provider + "resource \"kafkascale_topic\" \"t\" {\n" + body + "\n}\n"
	}
	cluster := func(n int, rebalance string) string { return clusterConfig(servers, apiURL, n, rebalance) }
	clusterWith := func(body string) string {
		return provider + "resource \"kafkascale_cluster\" \"test\" {\n" + body + "\n}\n"
	}
	httpScaling := fmt.Sprintf(`scaling {
    http {
      endpoint   = %q
      cluster_id = "local"
      %s
    }
  }`, apiURL, scalingTokenLine("s3cret-token"))
	app := func(id string, sources []string, partitions int, extra string) string {
		return provider + fmt.Sprintf(`
resource "kafkascale_streams_app" "test" {
  application_id = %q
  source_topics  = ["%s"]
  sink_topics    = ["mst-app-out"]
  partitions     = %d
  %s
}
`, id, strings.Join(sources, `", "`), partitions, extra)
	}
	sources := []string{"mst-app-in-a", "mst-app-in-b"}
	dataSource := func(extra string) string {
		return provider + "data \"kafkascale_rebalance_plan\" \"p\" {\n" + extra + "\n}\n"
	}

	cases := []mistake{
		// Provider block.
		{name: "one dead bootstrap server among live ones", works: true,
			config: testAccProviderConfig(append([]string{dead}, servers...), "") + `data "kafkascale_cluster" "c" {}`},
		{name: "TLS against a plaintext port", config: testAccProviderConfig(servers, `request_timeout = "10s"
  tls {
    insecure_skip_verify = true
  }`) + `data "kafkascale_cluster" "c" {}`,
			summary: "Not a TLS listener", detail: []string{"TLS handshake", "plaintext listener", "Point bootstrap_servers at the brokers' TLS listener", "or remove the tls block"}},
		{name: "SASL against a plaintext listener", config: testAccProviderConfig(servers, `request_timeout = "10s"
  sasl {
    mechanism = "SCRAM-SHA-512"
    username  = "admin"
    password  = "admin-secret"
  }`) + `data "kafkascale_cluster" "c" {}`,
			summary: "Not a SASL listener", detail: []string{"listener without SASL", "no credential was checked", "Point bootstrap_servers at the brokers' SASL listener", "or remove the sasl block"}},
		{name: "request_timeout without a unit", config: testAccProviderConfig(servers, `request_timeout = "30 seconds"`) + `data "kafkascale_cluster" "c" {}`,
			summary: "Invalid duration", attr: "request_timeout =", detail: []string{`"30 seconds" is not a duration`}},
		{name: "bootstrap server without a port", config: testAccProviderConfig([]string{"127.0.0.1"}, "") + `data "kafkascale_cluster" "c" {}`,
			summary: "Invalid server address", attr: "bootstrap_servers =", detail: []string{`"127.0.0.1" is not host:port`}},
		{name: "lease expire_after too short", config: testAccProviderConfig(servers, `operation_lease {
    expire_after = "1s"
  }`) + `data "kafkascale_cluster" "c" {}`,
			summary: "Lease expiry out of range", attr: "expire_after =", detail: []string{`operation_lease.expire_after is "1s", but it must be between 3s and 5m`, "heartbeats five times", "a second run takes over", "Set expire_after within that range, or leave it out for the default 2m"}},
		{name: "every bootstrap server dead", config: testAccProviderConfig([]string{dead}, `request_timeout = "2s"`) + `data "kafkascale_cluster" "c" {}`,
			summary: "Kafka cluster unreachable", detail: []string{"no bootstrap server answered", "Check that the brokers are running"}},

		// Data sources.
		{name: "data source: setting the read-only controller_id", config: provider + `data "kafkascale_cluster" "c" {
  controller_id = 1
}`, summary: "Invalid Configuration for Read-Only Attribute", attr: "controller_id =", detail: []string{"Remove the configuration line"}},
		{name: "data source: fewer brokers than a replication factor", config: dataSource("broker_count = 2"),
			summary: "This change of brokers cannot be made", attr: "broker_count =", detail: []string{"leaves 2 brokers, fewer than the replication factor 3", "mst-rf3"}},
		{name: "data source: removing an unknown broker", config: dataSource("broker_count = 2\n  remove_broker_ids = [9]"),
			attr: "remove_broker_ids =", summary: "This change of brokers cannot be made", detail: []string{"broker 9 is not registered; the registered brokers are [1 2 3]"}},
		{name: "data source: throttle too low", config: dataSource("broker_count = 4\n  throttle = 100"),
			summary: "Throttle below 1 KiB/s", attr: "throttle =", detail: []string{"throttle is 100, but it must be at least 1024", "more than 12 days", "Give the rate in bytes per second"}},

		// kafkascale_topic.
		{name: "topic: an existing topic declared as new", config: topic(`name = "mst-exists"
  partitions = 6
  replication_factor = 3
  config = { "retention.ms" = "604800000" }`),
			summary: "Topic already exists", attr: "name =", detail: []string{"not in the Terraform state", "import", "terraform import", "replication_factor: [2] in the cluster, 3 in the configuration", `config "retention.ms": "86400000" in the cluster, "604800000" in the configuration`}},
		{name: "topic: a slash in the name", config: topic(`name = "orders/eu"
  partitions = 3
  replication_factor = 1`),
			summary: "Character not allowed in a topic name", attr: "name =", detail: []string{`name is "orders/eu", but it may contain only ASCII letters, digits, '.', '_' and '-'`, "Kafka refuses to create", "orders.eu or orders-eu"}},
		{name: "topic: a name Kafka rejects", config: topic(`name = "mst.dotted"
  partitions = 1
  replication_factor = 1`),
			summary: "Invalid topic name", attr: "name =", detail: []string{"collides with existing topic", "mst_dotted", "Choose another name"}},
		{name: "topic: an unknown config key", config: topic(`name = "mst-new"
  partitions = 1
  replication_factor = 1
  config = { "retention.msec" = "1000" }`),
			summary: "Invalid topic config", attr: "config =", detail: []string{"retention.msec", "Fix the key or value in config"}},
		{name: "topic: a config value of the wrong type", config: topic(`name = "mst-new"
  partitions = 1
  replication_factor = 1
  config = { "retention.ms" = "one week" }`),
			summary: "Invalid topic config", attr: "config =", detail: []string{"Invalid value one week for configuration retention.ms"}},
		{name: "topic: replication factor above the broker count", config: topic(`name = "mst-new"
  partitions = 1
  replication_factor = 4`),
			summary: "Replication factor above the broker count", attr: "replication_factor =", detail: []string{"3 live broker(s) (1, 2, 3)", "Lower replication_factor to at most 3, or add brokers first"}},
		{name: "topic: negative partitions", config: topic(`name = "mst-new"
  partitions = -3
  replication_factor = 1`),
			summary: "Partition count out of range", attr: "partitions =", detail: []string{"partitions is -3, but it must be between 1 and 1048576", "needs at least one", "Set partitions to the number the topic should have"}},
		{name: "topic: replication factor 0", config: topic(`name = "mst-new"
  partitions = 1
  replication_factor = 0`),
			summary: "Replication factor out of range", attr: "replication_factor =", detail: []string{"replication_factor is 0, but it must be between 1 and 32767", "at least one replica", "Set replication_factor between 1 and the number of brokers"}},
		{name: "topic: min.insync.replicas above the replication factor", config: topic(`name = "mst-new"
  partitions = 1
  replication_factor = 2
  config = { "min.insync.replicas" = "3" }`),
			summary: "min.insync.replicas above the replication factor", attr: "config =", detail: []string{"NOT_ENOUGH_REPLICAS", "Set min.insync.replicas to at most 2"}},
		{name: "topic: a throttle config in config", config: topic(`name = "mst-new"
  partitions = 1
  replication_factor = 1
  config = { "leader.replication.throttled.replicas" = "*" }`),
			summary: "Config managed by kafkascale", attr: "config =", detail: []string{"remove it from config"}},
		{name: "topic: throttle too low", config: topic(`name = "mst-new"
  partitions = 1
  replication_factor = 1
  throttle = 10`),
			summary: "Throttle below 1 KiB/s", attr: "throttle =", detail: []string{"throttle is 10, but it must be at least 1024", "KiB/s or MiB/s", "for example 10485760 for 10 MiB/s"}},
		{name: "topic: a shrink after an import", config: `import {
  to = kafkascale_topic.t
  id = "mst-shrink"
}
` + topic(`name = "mst-shrink"
  partitions = 3
  replication_factor = 1`),
			summary: "Kafka cannot shrink a topic", attr: "partitions =", detail: []string{"Topic mst-shrink has 6 partitions and the configuration asks for 3", "Set partitions to 6 or more"}},

		// kafkascale_cluster.
		{name: "cluster: zero brokers", config: cluster(0, ""),
			summary: "Fewer than one broker", attr: "broker_count =", detail: []string{"broker_count is 0, but it must be at least 1", "would hold no topic", "Set broker_count to 1 or more"}},
		{name: "cluster: fewer brokers than a replication factor", config: cluster(2, ""),
			summary: "This change of brokers cannot be made", attr: "broker_count =", detail: []string{"leaves 2 brokers, fewer than the replication factor 3", "Keep at least 3 brokers"}},
		{name: "cluster: removing an unknown broker", config: clusterWith("broker_count = 2\n  remove_broker_ids = [9]\n  " + httpScaling),
			summary: "This change of brokers cannot be made", attr: "remove_broker_ids =", detail: []string{"broker 9 is not registered", "Name only registered brokers"}},
		{name: "cluster: a negative broker id", config: clusterWith("broker_count = 2\n  remove_broker_ids = [-1]\n  " + httpScaling),
			summary: "Negative broker id", attr: "remove_broker_ids =", detail: []string{"remove_broker_ids contains -1, but it must be at least 0", "names no broker", "Name the ids of registered brokers"}},
		{name: "cluster: a scale-out with ids to remove", config: clusterWith("broker_count = 4\n  remove_broker_ids = [3]\n  " + httpScaling),
			summary: "This change of brokers cannot be made", attr: "remove_broker_ids =", detail: []string{"a scale-out removes no broker", "set broker_count to 3 to replace them"}},
		{name: "cluster: a broker start time under a second", config: clusterWith("broker_count = 4\n  " + strings.Replace(httpScaling, "scaling {", "scaling {\n    broker_start_time = \"500ms\"", 1)),
			summary: "broker_start_time out of range", attr: "broker_start_time =", detail: []string{`scaling.broker_start_time is "500ms", but it must be between 1s and 24h`, "no platform starts a broker", "Set it to about how long the platform takes to add one broker"}},
		{name: "cluster: no scaling method", config: clusterWith("broker_count = 4"),
			summary: "Missing scaling method", attr: `resource "kafkascale_cluster" "test" {`, detail: []string{"could not add or remove a broker", "Add a scaling block with exactly one of"}},
		{name: "cluster: an endpoint without a scheme", config: clusterConfig(servers, strings.TrimPrefix(apiURL, "http://"), 4, ""),
			summary: "Invalid URL", attr: "endpoint =", detail: []string{"Give the whole URL"}},
		{name: "cluster: the scaling API does not know the cluster id", config: clusterWith(fmt.Sprintf(`broker_count = 4
  scaling {
    http {
      endpoint   = %q
      cluster_id = "kafka-prod"
      %s
    }
  }`, apiURL, scalingTokenLine("s3cret-token"))),
			summary: "Unknown cluster_id", attr: "cluster_id =", detail: []string{"answered 404", `"kafka-prod"`, "Nothing was changed", "Set cluster_id to the platform's id of this cluster"}},
		{name: "cluster: a scale_up program not on PATH", config: clusterWith(`broker_count = 4
  scaling {
    command {
      scale_up   = ["kafka-scale-nonexistent", "{broker_count}"]
      scale_down = ["kafka-scale-nonexistent", "{remove_broker_ids}"]
    }
  }`),
			summary: "Command not found", attr: "scale_up =", detail: []string{`"kafka-scale-nonexistent"`, "is not on PATH", "Install it where Terraform runs, or give its full path"}},
		{name: "cluster: min_free_disk_percent above 99", config: cluster(4, "min_free_disk_percent = 150"),
			summary: "Free disk share out of range", attr: "min_free_disk_percent =", detail: []string{"rebalance.min_free_disk_percent is 150, but it must be between 0 and 99", "no replica could move", "Give a percentage"}},
		{name: "cluster: min_throttle above max_throttle", config: cluster(4, "min_throttle = 20971520\n    max_throttle = 10485760"),
			summary: "min_throttle above max_throttle", attr: "min_throttle =", detail: []string{"min_throttle is 20971520 B/s but max_throttle is 10485760 B/s", "Lower min_throttle or raise max_throttle"}},
		{name: "cluster: zero moves per step", config: cluster(4, "max_moves_per_step = 0"),
			summary: "Move limit below 1", attr: "max_moves_per_step =", detail: []string{"rebalance.max_moves_per_step is 0, but it must be at least 1", "could never finish", "Set it to 1 or more"}},
		{name: "cluster: adjust_interval without a unit", config: cluster(4, `adjust_interval = "30"`),
			summary: "Invalid duration", attr: "adjust_interval =", detail: []string{"missing unit"}},
		{name: "cluster: initial_throttle outside its bounds", config: cluster(4, "initial_throttle = 1048576"),
			summary: "initial_throttle outside [min_throttle, max_throttle]", attr: "initial_throttle =", detail: []string{"initial_throttle is 1048576 B/s, but it must lie between min_throttle (5242880 B/s) and max_throttle (104857600 B/s)", "starts at initial_throttle", "Set initial_throttle between them", "min_throttle is not set, so it is its default 5242880 B/s (5 MiB/s)"}},
		{name: "cluster: a metrics block without prometheus_url", config: cluster(4, "metrics {}"),
			summary: "Missing prometheus_url", attr: "metrics {", detail: []string{"Set prometheus_url to the base URL of your Prometheus", "or remove the metrics block"}},
		{name: "cluster: a Prometheus URL that is not Prometheus", config: cluster(4, fmt.Sprintf(`metrics {
      prometheus_url = %q
    }`, notProm.URL)),
			summary: "Not a Prometheus server", attr: "prometheus_url =", detail: []string{"did not answer as Prometheus' query API", "Nothing was changed"}},

		{name: "cluster: a broker_count change while another run holds the cluster",
			config: testAccProviderConfig(servers, `operation_lease {
    fail_fast = true
  }`) + strings.TrimPrefix(cluster(4, ""), provider), apply: true,
			setup:   func(t *testing.T) { holdLease(t, c, `kafkascale_topic "orders"`, "grow topic orders to 12 partitions") },
			summary: "Another operation holds the cluster", attr: "broker_count =",
			detail: []string{`kafkascale_topic "orders"`, "ci-runner-7", "4242", "Nothing was changed", "Apply again once that operation is done, or unset fail_fast"}},

		// kafkascale_streams_app.
		{name: "streams: an app that never ran", config: app("mst-fresh", sources, 8, "static_partitioning = true"),
			summary: "Streams expansion refused", attr: "application_id =", detail: []string{`unknown application id "mst-fresh"`, "run the app once so that Streams creates them"}},
		{name: "streams: sources with different counts", config: app("mst-app", []string{"mst-app-in-a", "mst-uneven"}, 8, "static_partitioning = true"),
			summary: "Streams expansion refused", attr: "source_topics =", detail: []string{"different partition counts", "Bring the sources to one count first"}},
		{name: "streams: fewer partitions than the app has", config: app("mst-app", sources, 4, "static_partitioning = true"),
			summary: "Streams expansion refused", attr: "partitions =", detail: []string{"partitions = 4 is below the 6 partitions of", "Kafka can add partitions to a topic but never remove them"}},
		{name: "streams: growth without static partitioning", config: app("mst-app", sources, 8, ""),
			summary: "Streams expansion refused", attr: `resource "kafkascale_streams_app" "test" {`, detail: []string{`static_partitioning is false, so the expansion of "mst-app" to 8 partitions is refused`}},
		{name: "streams: a missing source topic", config: app("mst-app", append(sources, "mst-app-in-missing"), 8, "static_partitioning = true"),
			summary: "Streams expansion refused", attr: "source_topics =", detail: []string{`source topic "mst-app-in-missing" does not exist`, "kafkascale grows an app's topics but creates none", "Create it first, for example with a kafkascale_topic resource", "or correct source_topics", "Nothing was changed on the cluster"}},
		{name: "streams: a topic both source and sink", config: app("mst-app", append(sources, "mst-app-out"), 8, "static_partitioning = true"),
			summary: "Topic both source and sink", attr: "sink_topics =", detail: []string{"Remove it from sink_topics"}},
		{name: "streams: an internal topic listed as a source", config: app("mst-app", append(sources, "mst-app-agg-repartition"), 8, "static_partitioning = true"),
			summary: "Internal topic listed", attr: "source_topics =", detail: []string{"remove it from source_topics and sink_topics"}},
		{name: "streams: fixed_internal_topics naming a non-internal topic", config: app("mst-app", sources, 8, `static_partitioning = true
  fixed_internal_topics = ["mst-app-out"]`),
			summary: "Streams expansion refused", attr: "fixed_internal_topics =", detail: []string{"-repartition or -changelog"}},
		{name: "streams: an ftp webhook", config: app("mst-app", sources, 8, `static_partitioning = true
  on_expansion_url = "ftp://deploy.example.com/hook"`),
			summary: "Invalid URL", attr: "on_expansion_url =", detail: []string{"must start with http:// or https://"}},
		{name: "streams: quiet_period in words", config: app("mst-app", sources, 8, `static_partitioning = true
  quiet_period = "half a minute"`),
			summary: "Invalid duration", attr: "quiet_period =", detail: []string{`"half a minute" is not a duration`}},
		{name: "streams: quiesce commands not on PATH", config: app("mst-app", sources, 8, `static_partitioning = true
  quiesce {
    stop  = ["kafka-app-stop-nonexistent"]
    start = ["kafka-app-start-nonexistent"]
  }`),
			summary: "Command not found", attr: "stop =", detail: []string{`"kafka-app-stop-nonexistent"`, "is not on PATH"}},
		{name: "streams: quiesce without start", config: app("mst-app", sources, 8, `static_partitioning = true
  quiesce {
    stop = ["true"]
  }`),
			summary: "Missing quiesce command", attr: "quiesce {", detail: []string{"quiesce.start is required", "it needs both commands"}},
	}

	for _, m := range cases {
		t.Run(m.name, func(t *testing.T) {
			if m.setup != nil {
				m.setup(t)
			}
			before := snapshotCluster(t, c)
			step := resource.TestStep{Config: m.config, PlanOnly: !m.apply, ExpectNonEmptyPlan: !m.works}
			if !m.works {
				step.ExpectError = m.pattern()
			} else {
				step.PlanOnly = false
			}
			steps := []resource.TestStep{step}
			if m.steps != nil {
				steps = m.steps(m.pattern())
			}
			resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: steps})
			for _, d := range before.diff(snapshotCluster(t, c)) {
				t.Errorf("the cluster changed: %s", d)
			}
		})
	}
}

// holdLease makes another Terraform run (host ci-runner-7, pid 4242) hold
// the cluster's operation lease for resource until the test ends.
func holdLease(t *testing.T, c *kafkatest.Cluster, resource, what string) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	l := &executor.Lessee{Records: cl.LeaseLog(), Host: "ci-runner-7", PID: 4242, Session: "another-run"}
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		done <- l.Hold(ctx, executor.LeaseWork{Operation: "op-mistakes-orders", Resource: resource, What: what},
			func(context.Context, *executor.Held) error {
				close(held)
				<-release
				return nil
			})
	}()
	t.Cleanup(func() {
		close(release)
		if err := <-done; err != nil {
			t.Errorf("holding the lease: %v", err)
		}
		cancel()
		cl.Close()
	})
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("holding the lease: %v", err)
	}
}
