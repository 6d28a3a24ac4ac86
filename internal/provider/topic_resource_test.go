package provider_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/provider"
)

// topicConfig renders one kafkascale_topic named "test"; body holds the
// extra attribute lines.
func topicConfig(servers []string, name string, partitions, rf int, body string) string {
	return testAccProviderConfig(servers, "") + fmt.Sprintf(`
resource "kafkascale_topic" "test" {
  name               = %q
  partitions         = %d
  replication_factor = %d
  %s
}
`, name, partitions, rf, body)
}

// warningRecorder keeps the warnings the provider returns from
// PlanResourceChange and ReadResource, as Terraform receives them. terraform-plugin-testing
// shows no warning to a test, so the provider server is wrapped where it
// answers Terraform: what is recorded is exactly what `terraform plan`
// prints.
type warningRecorder struct {
	mu  sync.Mutex
	got []string
}

func (w *warningRecorder) factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"kafkascale": func() (tfprotov6.ProviderServer, error) {
			s, err := providerserver.NewProtocol6WithError(provider.New("test")())()
			if err != nil {
				return nil, err
			}
			return warningServer{ProviderServer: s, rec: w}, nil
		},
	}
}

func (w *warningRecorder) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = nil
}

func (w *warningRecorder) warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// expect checks that some warning matches every pattern.
func (w *warningRecorder) expect(patterns ...string) error {
	got := w.warnings()
	for _, g := range got {
		all := true
		for _, p := range patterns {
			all = all && regexp.MustCompile(p).MatchString(g)
		}
		if all {
			return nil
		}
	}
	return fmt.Errorf("no plan warning matches %q; the plan warned:\n%s", patterns, strings.Join(got, "\n---\n"))
}

func (w *warningRecorder) expectNone(pattern string) error {
	for _, g := range w.warnings() {
		if regexp.MustCompile(pattern).MatchString(g) {
			return fmt.Errorf("the plan warned %q, but it must not: %s", pattern, g)
		}
	}
	return nil
}

type warningServer struct {
	tfprotov6.ProviderServer
	rec *warningRecorder
}

func (s warningServer) record(ds []*tfprotov6.Diagnostic) {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	for _, d := range ds {
		if d.Severity == tfprotov6.DiagnosticSeverityWarning {
			s.rec.got = append(s.rec.got, d.Summary+": "+d.Detail)
		}
	}
}

func (s warningServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	resp, err := s.ProviderServer.ReadResource(ctx, req)
	if resp != nil {
		s.record(resp.Diagnostics)
	}
	return resp, err
}

func (s warningServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := s.ProviderServer.PlanResourceChange(ctx, req)
	if resp != nil {
		s.record(resp.Diagnostics)
	}
	return resp, err
}

func topicTestClient(t *testing.T, c *kafkatest.Cluster) *kafka.Client {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// expectedPlacement is what the engine places for topic at count
// partitions from the cluster as it is now: the provider must send exactly
// this, which proves the assignment was explicit (the controller's own
// placement is random) and follows the engine's rack-aware, least-loaded
// order.
func expectedPlacement(t *testing.T, cl *kafka.Client, topic string, count, rf int) []engine.Partition {
	t.Helper()
	pl, err := cl.BeginPlacement(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Release()
	ps, err := engine.PlacePartitions(pl.Cluster, topic, count, rf, engine.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// brokerTopic asks one broker directly (no client cache) for a topic.
func brokerTopic(t *testing.T, c *kafkatest.Cluster, broker int32, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	kr, err := req.RequestWith(context.Background(), c.Client().Broker(int(broker)))
	if err != nil {
		t.Fatalf("asking broker %d for topic %s: %v", broker, topic, err)
	}
	return kr.Topics[0]
}

func runningBrokers(c *kafkatest.Cluster) []kafkatest.Broker {
	var out []kafkatest.Broker
	for _, b := range c.Brokers() {
		if b.Running {
			out = append(out, b)
		}
	}
	return out
}

// assertTopicOnEveryBroker checks that every broker shows the topic with
// partitions partitions of rf replicas, each with a leader and a full ISR,
// that no partition has two replicas in one rack while racks are left, and
// returns the replicas by partition.
func assertTopicOnEveryBroker(t *testing.T, c *kafkatest.Cluster, topic string, partitions, rf int) map[int32][]int32 {
	t.Helper()
	rack := map[int32]string{}
	racks := map[string]bool{}
	for _, b := range c.Brokers() {
		rack[b.ID] = b.Rack
		racks[b.Rack] = true
	}
	var out map[int32][]int32
	for _, b := range runningBrokers(c) {
		tp := brokerTopic(t, c, b.ID, topic)
		if tp.ErrorCode != 0 {
			t.Errorf("broker %d: topic %s: %v", b.ID, topic, kerr.ErrorForCode(tp.ErrorCode))
			continue
		}
		if len(tp.Partitions) != partitions {
			t.Errorf("broker %d shows %d partitions of %s, want %d", b.ID, len(tp.Partitions), topic, partitions)
		}
		got := map[int32][]int32{}
		for _, p := range tp.Partitions {
			got[p.Partition] = p.Replicas
			switch {
			case len(p.Replicas) != rf:
				t.Errorf("broker %d: %s p%d has replicas %v, want %d", b.ID, topic, p.Partition, p.Replicas, rf)
			case p.Leader < 0:
				t.Errorf("broker %d: %s p%d has no leader", b.ID, topic, p.Partition)
			case len(p.ISR) != len(p.Replicas):
				t.Errorf("broker %d: %s p%d has in-sync replicas %v of %v", b.ID, topic, p.Partition, p.ISR, p.Replicas)
			}
			seen := map[string]bool{}
			for _, r := range p.Replicas {
				seen[rack[r]] = true
			}
			if want := min(rf, len(racks)); len(seen) != want {
				t.Errorf("%s p%d: replicas %v span racks %v; want %d racks", topic, p.Partition, p.Replicas, keys(seen), want)
			}
		}
		out = got
	}
	return out
}

func keys[K cmp.Ordered](m map[K]bool) []K {
	return slices.Sorted(maps.Keys(m))
}

func assertPlacedAsEngine(t *testing.T, got map[int32][]int32, want []engine.Partition) {
	t.Helper()
	for _, p := range want {
		if !slices.Equal(got[p.Partition], p.Replicas) {
			t.Errorf("%s p%d has replicas %v; the engine placed %v (rack-aware, least-loaded), so the assignment was not sent as placed",
				p.Topic, p.Partition, got[p.Partition], p.Replicas)
		}
	}
}

// ownConfigsByBroker reads the topic's own configs (DYNAMIC_TOPIC_CONFIG)
// from each broker.
func ownConfigsByBroker(t *testing.T, c *kafkatest.Cluster, topic string) map[int32]map[string]string {
	t.Helper()
	out := map[int32]map[string]string{}
	for _, b := range runningBrokers(c) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		req.Resources = append(req.Resources, r)
		kr, err := req.RequestWith(context.Background(), c.Client().Broker(int(b.ID)))
		if err != nil {
			t.Fatal(err)
		}
		own := map[string]string{}
		for _, cfg := range kr.Resources[0].Configs {
			if cfg.Source == kmsg.ConfigSourceDynamicTopicConfig && cfg.Value != nil {
				own[cfg.Name] = *cfg.Value
			}
		}
		out[b.ID] = own
	}
	return out
}

// topicOwnConfigs reads the topic's own configs and checks that every
// broker shows the same: after an apply returns, they must.
func topicOwnConfigs(t *testing.T, c *kafkatest.Cluster, topic string) map[string]string {
	t.Helper()
	var first map[string]string
	for b, own := range ownConfigsByBroker(t, c, topic) {
		if first == nil {
			first = own
		} else if fmt.Sprint(own) != fmt.Sprint(first) {
			t.Errorf("broker %d shows configs %v of %s, another broker %v", b, own, topic, first)
		}
	}
	return first
}

// alterOutside changes a topic config as another tool would, and waits
// until every broker shows it.
func alterOutside(t *testing.T, c *kafkatest.Cluster, topic string, op kadm.IncrementalOp, key, value string) {
	t.Helper()
	var v *string
	if op != kadm.DeleteConfig {
		v = &value
	}
	resp, err := c.Admin().AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Op: op, Name: key, Value: v}}, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("changing %s of %s outside Terraform: %v", key, topic, err)
	}
	for i := 0; i < 100; i++ {
		all := true
		for _, own := range ownConfigsByBroker(t, c, topic) {
			got, ok := own[key]
			all = all && ((op == kadm.DeleteConfig && !ok) || (op != kadm.DeleteConfig && got == value))
		}
		if all {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s of %s never showed the change on every broker", key, topic)
}

func checkTopicGone(c *kafkatest.Cluster, t *testing.T, topic string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, b := range runningBrokers(c) {
			if tp := brokerTopic(t, c, b.ID, topic); tp.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				return fmt.Errorf("broker %d still lists topic %s after destroy", b.ID, topic)
			}
		}
		return nil
	}
}

// expectConfigDrift checks that the refresh found the config changed
// outside Terraform and plans it back: before is what Kafka has, after what
// the configuration says.
type expectConfigDrift struct {
	address, key, before, after string
}

func (e expectConfigDrift) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != e.address {
			continue
		}
		if !rc.Change.Actions.Update() {
			resp.Error = fmt.Errorf("%s: actions %v, want an in-place update", e.address, rc.Change.Actions)
			return
		}
		beforeObj, _ := rc.Change.Before.(map[string]any)
		afterObj, _ := rc.Change.After.(map[string]any)
		before, _ := beforeObj["config"].(map[string]any)
		after, _ := afterObj["config"].(map[string]any)
		if before[e.key] != e.before || after[e.key] != e.after {
			resp.Error = fmt.Errorf("%s config %s planned from %v to %v; want from %q (the drift) to %q", e.address, e.key, before[e.key], after[e.key], e.before, e.after)
		}
		return
	}
	resp.Error = fmt.Errorf("no planned change for %s", e.address)
}

// Bad input is refused before anything reaches Kafka: these need no
// cluster.
func TestTopicResource_invalidConfiguration(t *testing.T) {
	servers := []string{closedPort(t)}
	cases := []struct {
		name   string
		config string
		want   string
	}{
		{"no partitions", topicConfig(servers, "t", 0, 1, ""), `(?s)partitions.*between 1 and`},
		{"no replicas", topicConfig(servers, "t", 1, 0, ""), `(?s)replication_factor.*between 1 and`},
		{"bad name", topicConfig(servers, "a topic", 1, 1, ""), `(?s)name.*may contain only ASCII letters`},
		{"dot name", topicConfig(servers, "..", 1, 1, ""), `(?s)name.*must be none of`},
		{"long name", topicConfig(servers, strings.Repeat("x", 250), 1, 1, ""), `(?s)name.*length must be between 1 and 249`},
		{"throttle config", topicConfig(servers, "t", 1, 1, `config = { "leader.replication.throttled.replicas" = "*" }`),
			`(?s)Config managed by kafkascale.*leader.replication.throttled.replicas`},
		{"tiny throttle", topicConfig(servers, "t", 1, 1, `throttle = 10`), `(?s)throttle.*at least 1024`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: tc.config, ExpectError: wrapped(tc.want)}},
			})
		})
	}
}

// Create with configs, import, no-op plan, drift, update, destroy; with
// racks a, b, c, a.
func TestAccTopicResource_lifecycle(t *testing.T) {
	testAccParallel(t)
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 4})
	cl := topicTestClient(t, c)
	servers := c.BootstrapServers()
	const addr = "kafkascale_topic.test"
	created := topicConfig(servers, "orders", 6, 2, `config = {
    "retention.ms"   = "3600000"
    "cleanup.policy" = "delete"
  }`)
	var want []engine.Partition

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkTopicGone(c, t, "orders-v2"),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { want = expectedPlacement(t, cl, "orders", 6, 2) },
				Config:    created,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("orders")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("partitions"), knownvalue.Int64Exact(6)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("replication_factor"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("config"), knownvalue.MapExact(map[string]knownvalue.Check{
						"retention.ms": knownvalue.StringExact("3600000"), "cleanup.policy": knownvalue.StringExact("delete"),
					})),
				},
				Check: func(*terraform.State) error {
					// Create returned, so leaders and ISRs must be complete now.
					assertPlacedAsEngine(t, assertTopicOnEveryBroker(t, c, "orders", 6, 2), want)
					if got := topicOwnConfigs(t, c, "orders"); fmt.Sprint(got) != "map[cleanup.policy:delete retention.ms:3600000]" {
						t.Errorf("own configs %v", got)
					}
					return nil
				},
			},
			{
				ResourceName:      addr,
				ImportState:       true,
				ImportStateId:     "orders",
				ImportStateVerify: true,
			},
			{
				// kafkascale's own throttle config on the topic is not drift.
				PreConfig: func() {
					alterOutside(t, c, "orders", kadm.SetConfig, kafka.ConfigLeaderThrottledReplicas, "0:1")
				},
				Config:   created,
				PlanOnly: true,
			},
			{
				PreConfig: func() { alterOutside(t, c, "orders", kadm.SetConfig, "retention.ms", "60000") },
				Config:    created,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					expectConfigDrift{address: addr, key: "retention.ms", before: "60000", after: "3600000"},
				}},
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Update: a changed value, a removed key; the throttle list
				// someone else set survives.
				Config: topicConfig(servers, "orders", 6, 2, `config = { "retention.ms" = "7200000" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					got := topicOwnConfigs(t, c, "orders")
					if fmt.Sprint(got) != "map[leader.replication.throttled.replicas:0:1 retention.ms:7200000]" {
						t.Errorf("own configs after update %v; want retention.ms=7200000, cleanup.policy gone, the throttle list kept", got)
					}
					alterOutside(t, c, "orders", kadm.DeleteConfig, kafka.ConfigLeaderThrottledReplicas, "")
					return nil
				},
			},
			{
				Config: topicConfig(servers, "orders", 6, 2, `config = { "retention.ms" = "7200000" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop),
				}},
			},
			{
				// A new name is a new topic: the old one goes with its data.
				Config: topicConfig(servers, "orders-v2", 6, 2, `config = { "retention.ms" = "7200000" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("orders-v2")),
				}},
				Check: func(s *terraform.State) error {
					assertTopicOnEveryBroker(t, c, "orders-v2", 6, 2)
					return checkTopicGone(c, t, "orders")(s)
				},
			},
		},
	})
}

// Growth (with and without the keyed-topic warning), refused shrink and
// bad input, and a throttled replication factor change, on brokers in
// racks a, b, c, a.
func TestAccTopicResource_scale(t *testing.T) {
	testAccParallel(t)
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 4})
	cl := topicTestClient(t, c)
	servers := c.BootstrapServers()
	const addr = "kafkascale_topic.test"
	rec := &warningRecorder{}
	var want []engine.Partition
	ctx := context.Background()

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		CheckDestroy:             checkTopicGone(c, t, "events"),
		Steps: []resource.TestStep{
			{
				Config: topicConfig(servers, "events", 4, 2, ""),
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, "events", 4, 2)
					// Keyed records, spread by the default partitioner.
					return produceKeyed(servers, "events", 200)
				},
			},
			{
				PreConfig: func() {
					rec.reset()
					want = expectedPlacement(t, cl, "events", 6, 0)
				},
				Config: topicConfig(servers, "events", 6, 2, ""),
				Check: func(*terraform.State) error {
					assertPlacedAsEngine(t, assertTopicOnEveryBroker(t, c, "events", 6, 2), want)
					return rec.expect(`^Growing a keyed topic moves keys to other partitions`, `from 4 to 6 partitions`,
						`the latest records of p\d.* carry keys`, `default partitioner`, `old keys in new partitions`,
						`static_partitioning = true`)
				},
			},
			{
				PreConfig: func() {
					rec.reset()
					want = expectedPlacement(t, cl, "events", 8, 0)
				},
				Config: topicConfig(servers, "events", 8, 2, "static_partitioning = true"),
				Check: func(*terraform.State) error {
					assertPlacedAsEngine(t, assertTopicOnEveryBroker(t, c, "events", 8, 2), want)
					return rec.expectNone(`keyed topic`)
				},
			},
			{
				Config:      topicConfig(servers, "events", 5, 2, "static_partitioning = true"),
				ExpectError: wrapped(`(?s)Kafka cannot shrink a topic.*has 8 partitions and the configuration asks for 5.*never remove them`),
			},
			{
				Config:      topicConfig(servers, "events", 8, 5, "static_partitioning = true"),
				ExpectError: wrapped(`(?s)Replication factor above the broker count.*replication_factor 5 needs 5 brokers.*4 live broker\(s\) \(1, 2, 3, 4\)`),
			},
			{
				Config:      topicConfig(servers, "events", 8, 2, "static_partitioning = true\n  config = { \"retention.ms\" = \"soon\" }"),
				ExpectError: wrapped(`(?s)Invalid topic config.*retention.ms`),
			},
			{
				PreConfig: func() { rec.reset() },
				Config:    topicConfig(servers, "events", 8, 3, "static_partitioning = true\n  throttle = 10485760"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("replication_factor"), knownvalue.Int64Exact(3)),
				},
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, "events", 8, 3)
					assertNoThrottles(t, c)
					op, err := cl.Operations().Load(ctx, "topic/"+c.ClusterID()+"/events")
					if err != nil {
						return err
					}
					if op == nil || op.Phase != executor.PhaseCompleted || op.Kind != executor.KindReplicationFactor || op.Plan.ReplicaMoves != 8 {
						return fmt.Errorf("operation %+v; want a completed replication-factor change of 8 replica copies", op)
					}
					if op.ThrottleRate != 10485760 {
						t.Errorf("the change ran at %d B/s, want the configured throttle 10485760", op.ThrottleRate)
					}
					// The one cost line carries the ETA's breakdown.
					return rec.expect(`^Cost of the replication factor change`, `from 2 to 3 replicas per partition copies 8 replica`,
						`, ~[0-9ms]+: [0-9ms]+ copying [0-9.]+ (B|[KMG]iB) in [0-9]+ group\(s\) at 10 MiB/s per broker, `+
							// The test's producer may write to the topic meanwhile.
							`([0-9ms]+ catching up on [0-9.]+ (B|[KMG]iB)/s written to the moving partitions, )?`+
							`[0-9ms]+ starting and settling the groups, [0-9ms]+ verifying and electing leaders\.`)
				},
			},
			{
				Config:   topicConfig(servers, "events", 8, 3, "static_partitioning = true\n  throttle = 10485760"),
				PlanOnly: true,
			},
		},
	})
}

// expectPlannedReplicationFactor checks the refresh plan's change of
// replication_factor: before is what the state says after the refresh.
type expectPlannedReplicationFactor struct {
	address       string
	before, after float64
}

func (e expectPlannedReplicationFactor) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != e.address {
			continue
		}
		before, _ := rc.Change.Before.(map[string]any)
		after, _ := rc.Change.After.(map[string]any)
		// Plan JSON numbers decode as json.Number.
		if !rc.Change.Actions.Update() || fmt.Sprint(before["replication_factor"]) != fmt.Sprint(e.before) || fmt.Sprint(after["replication_factor"]) != fmt.Sprint(e.after) {
			resp.Error = fmt.Errorf("%s: %v replication_factor %v -> %v; want an update %v -> %v",
				e.address, rc.Change.Actions, before["replication_factor"], after["replication_factor"], e.before, e.after)
		}
		return
	}
	resp.Error = fmt.Errorf("no planned change for %s", e.address)
}

// A replication factor change that times out leaves the state at the old
// value and the operation saved; the next apply resumes it, at the throttle
// configured then.
func TestAccTopicResource_interruptedReplicationFactorChange(t *testing.T) {
	testAccParallel(t)
	c := startSlowReplicationCluster(t)
	cl := topicTestClient(t, c)
	servers := c.BootstrapServers()
	const addr = "kafkascale_topic.test"
	rec := &warningRecorder{}
	ctx := context.Background()
	slow := topicConfig(servers, "slow", 8, 3, `throttle = 65536
  timeouts {
    update = "20s"
  }`)
	fast := topicConfig(servers, "slow", 8, 3, `throttle = 52428800`)

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		CheckDestroy:             checkTopicGone(c, t, "slow"),
		Steps: []resource.TestStep{
			{
				Config: topicConfig(servers, "slow", 8, 2, ""),
				Check: func(*terraform.State) error {
					// 16 MiB: each broker receives about 4 MiB, over a minute
					// at 64 KiB/s.
					fillTopic(t, c, "slow", 16<<20)
					return cl.Operations().Ensure(ctx)
				},
			},
			{
				// The executor must see the reassignments in flight
				// (ListPartitionReassignments): Metadata alone shows an
				// added replica as in place from the start, and the change
				// would seem done long before its data is copied.
				Config:      slow,
				ExpectError: wrapped(`(?s)Replication factor change interrupted.*operation op-.*timeouts.update.*next apply resumes it`),
			},
			{
				PreConfig: func() { rec.reset() },
				Config:    slow,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					expectPlannedReplicationFactor{address: addr, before: 2, after: 3},
				}},
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				// PlanOnly steps run no Check: the warning is checked by the
				// next step's PreConfig.
			},
			{
				PreConfig: func() {
					if err := rec.expect(`^An interrupted replication factor change will resume`, `replication factor change of topic slow to 3\) stopped in phase reassign`); err != nil {
						t.Error(err)
					}
					op, err := cl.Operations().Load(ctx, "topic/"+c.ClusterID()+"/slow")
					if err != nil || op == nil || op.Done() || op.ThrottleRate != 65536 {
						t.Errorf("after the timeout the operation is %+v (err %v); want it saved unfinished at 65536 B/s", op, err)
					}
				},
				Config: fast,
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, "slow", 8, 3)
					assertNoThrottles(t, c)
					op, err := cl.Operations().Load(ctx, "topic/"+c.ClusterID()+"/slow")
					if err != nil {
						return err
					}
					if op == nil || op.Phase != executor.PhaseCompleted || op.ThrottleRate != 52428800 {
						return fmt.Errorf("operation %+v; want it completed, resumed at the new throttle 52428800", op)
					}
					t.Logf("operation %s: %d moves, %d bytes, completed %s after it started", op.ID, op.Plan.ReplicaMoves, op.Plan.TotalBytes,
						op.CompletedAt.Sub(op.StartedAt).Round(time.Millisecond))
					return nil
				},
			},
			{
				Config:   fast,
				PlanOnly: true,
			},
		},
	})
}

// startSlowReplicationCluster starts 4 brokers that keep to a replication
// throttle as low as 64 KiB/s, so that a change can be caught midway, in
// racks when the test names them (cycled over the brokers).
func startSlowReplicationCluster(t *testing.T, racks ...string) *kafkatest.Cluster {
	return kafkatest.StartT(t, kafkatest.Options{Brokers: 4, Racks: racks,
		// The replication quota is checked before a fetch, and a follower
		// fetches up to 10 MiB at once by default: small fetches make the
		// brokers keep to a rate this low.
		BrokerProperties: map[string]string{
			"replica.fetch.max.bytes":          "65536",
			"replica.fetch.response.max.bytes": "262144",
		}})
}

// A replication factor change 2 → 3 of 20 partitions is interrupted by its
// update timeout, under acks=all load, and the user sets 2 again. The plan
// is not empty: it says the apply cancels the change. The apply ends with
// every partition at 2 replicas, nothing reassigning and no throttle, every
// acknowledged record readable, and the next plan empty.
func TestAccTopicResource_revertedReplicationFactorChange(t *testing.T) {
	testAccParallel(t)
	// Racks a, b, c, a: brokers 1 and 4 share rack a, so a placement that
	// ignored racks could put both replicas of a partition in one rack, and
	// the rack check after the revert can fail.
	c := startSlowReplicationCluster(t, "a", "b", "c")
	cl := topicTestClient(t, c)
	servers := c.BootstrapServers()
	const addr, topic, partitions = "kafkascale_topic.test", "revert", 20
	rec := &warningRecorder{}
	ctx := context.Background()
	var led *ledger
	slow := topicConfig(servers, topic, partitions, 3, `throttle = 65536
  timeouts {
    update = "20s"
  }`)
	back := topicConfig(servers, topic, partitions, 2, `throttle = 52428800`)
	var interrupted *executor.Operation

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: rec.factories(),
		CheckDestroy:             checkTopicGone(c, t, topic),
		Steps: []resource.TestStep{
			{
				Config: topicConfig(servers, topic, partitions, 2, ""),
				Check: func(*terraform.State) error {
					// 3.2 MiB a partition: at 64 KiB/s a copy takes about
					// 50 s, so the 20 s timeout always stops a group with
					// moves in flight (16 MiB let an idle machine finish
					// the first group before it).
					fillTopic(t, c, topic, 64<<20)
					led = runLedger(t, c, topic)
					waitFor(t, "the ledger's first acknowledged records", func() bool { return led.ackedCount() >= 50 })
					return cl.Operations().Ensure(ctx)
				},
			},
			{
				Config:      slow,
				ExpectError: wrapped(`(?s)Replication factor change interrupted.*operation op-`),
			},
			{
				PreConfig: func() {
					rec.reset()
					op, err := cl.Operations().Load(ctx, "topic/"+c.ClusterID()+"/"+topic)
					if err != nil || op == nil || op.Done() {
						t.Fatalf("after the timeout the operation is %+v (err %v); want it unfinished", op, err)
					}
					interrupted = op
					if len(throttlesSet(t, c)) == 0 {
						t.Fatal("no throttle is set after the timeout: the change was not caught midway, so this proves nothing")
					}
				},
				Config: back,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("pending_operation"), knownvalue.Null()),
				}},
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				PreConfig: func() {
					if err := rec.expect(`^An unfinished replication factor change will be cancelled`,
						`cancels operation `+interrupted.ID+` \(replication-factor\): [1-9]\d* move\(s\) in flight are reverted`,
						`every partition of topic revert goes to 2 replicas`); err != nil {
						t.Error(err)
					}
				},
				Config: back,
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, topic, partitions, 2)
					assertNoThrottles(t, c)
					if rs := reassigning(t, c); len(rs) > 0 {
						t.Errorf("%d partitions still reassigning after the apply", len(rs))
					}
					if acked := led.stop(); acked == 0 {
						t.Fatal("no record was acknowledged, so none being lost proves nothing")
					}
					// Nothing is killed, and the revert only drops the
					// replicas still copying: verify allows no failed
					// produce.
					led.verify(ctx)
					return nil
				},
			},
			{
				Config:   back,
				PlanOnly: true,
			},
		},
	})
}

// Lowering the replication factor 3 -> 2 only removes replicas: nothing is
// copied, so it must finish quickly, under acks=all load and with a
// consumer group reading, and leave the topic as the engine planned it.
func TestAccTopicResource_lowerReplicationFactor(t *testing.T) {
	testAccParallel(t)
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 4})
	cl := topicTestClient(t, c)
	servers := c.BootstrapServers()
	ctx := t.Context()
	const topic, group = "lower", "lower-readers"
	const partitions = 6
	// A drop copies nothing: minutes are plenty even on a loaded machine,
	// and a change that never ends fails here rather than at the test's
	// deadline.
	lowered := topicConfig(servers, topic, partitions, 2, `timeouts {
    update = "5m"
  }`)
	var led *ledger
	var readers *groupReader
	var before map[int32]int64
	var stopWatch func()
	t.Cleanup(func() {
		if stopWatch != nil {
			stopWatch()
		}
	})

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkTopicGone(c, t, topic),
		Steps: []resource.TestStep{
			{
				Config: topicConfig(servers, topic, partitions, 3, ""),
				Check: func(*terraform.State) error {
					assertTopicOnEveryBroker(t, c, topic, partitions, 3)
					fillTopic(t, c, topic, 6<<20)
					led = runLedger(t, c, topic)
					readers = startGroupReader(t, c, topic, group)
					waitFor(t, "the ledger's first acknowledged records", func() bool { return led.ackedCount() >= 50 })
					var err error
					before, err = readers.awaitCommitted(partitions, nil)
					return err
				},
			},
			{
				PreConfig: func() { stopWatch = watchReplicas(t, c, cl, topic) },
				Config:    lowered,
				Check: func(*terraform.State) error {
					stopWatch()
					got := assertTopicOnEveryBroker(t, c, topic, partitions, 2)
					live := map[int32]bool{}
					for _, b := range runningBrokers(c) {
						live[b.ID] = true
					}
					for p, rs := range got {
						for _, b := range rs {
							if !live[b] {
								t.Errorf("%s p%d has a replica on broker %d, which is not running", topic, p, b)
							}
						}
					}
					op, err := cl.Operations().Load(ctx, "topic/"+c.ClusterID()+"/"+topic)
					if err != nil {
						return err
					}
					if op == nil || op.Phase != executor.PhaseCompleted || op.Kind != executor.KindReplicationFactor ||
						op.Plan.ReplicaMoves != 0 || len(op.Plan.Moves()) != partitions {
						return fmt.Errorf("operation %+v; want a completed replication-factor change of %d drops and no copy", op, partitions)
					}
					t.Logf("operation %s: %d drops, completed %s after it started", op.ID, len(op.Plan.Moves()),
						op.CompletedAt.Sub(op.StartedAt).Round(time.Millisecond))
					assertPlacedAsEngine(t, got, op.Plan.Target)
					leaders := map[int32]int{}
					for _, rs := range got {
						leaders[rs[0]]++
					}
					for _, bp := range op.Plan.Brokers {
						if n := leaders[bp.Broker]; !bp.TargetLeaders.Contains(n) {
							t.Errorf("broker %d is preferred leader of %d partitions of %s; the engine planned %d..%d",
								bp.Broker, n, topic, bp.TargetLeaders.Min, bp.TargetLeaders.Max)
						}
					}
					t.Logf("preferred leaders per broker %v", leaders)
					waitFor(t, "every partition led by its preferred leader", func() bool {
						for _, b := range runningBrokers(c) {
							for _, p := range brokerTopic(t, c, b.ID, topic).Partitions {
								if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
									return false
								}
							}
						}
						return true
					})
					assertNoThrottles(t, c)
					// The group goes on: it commits past where it stood
					// when the change began, on every partition.
					if _, err := readers.awaitCommitted(partitions, before); err != nil {
						return err
					}
					if n := led.stop(); n == 0 {
						return fmt.Errorf("the ledger acknowledged nothing: there was no load to lose")
					}
					// Nothing is killed, and a drop keeps a replica in
					// sync: verify allows no failed produce.
					led.verify(ctx)
					t.Logf("the group read %d records", readers.consumed())
					return nil
				},
			},
			{
				Config:   lowered,
				PlanOnly: true,
			},
		},
	})
}

// groupReader is a consumer group member that reads a topic from the start
// and commits every half second.
type groupReader struct {
	c     *kafkatest.Cluster
	topic string
	group string
	mu    sync.Mutex
	n     int
}

func startGroupReader(t *testing.T, c *kafkatest.Cluster, topic, group string) *groupReader {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapServers()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	g := &groupReader{c: c, topic: topic, group: group}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cons.Close()
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			g.mu.Lock()
			g.n += fs.NumRecords()
			g.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

func (g *groupReader) consumed() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// awaitCommitted waits until the group has committed beyond past on every
// partition below n, and returns what it committed.
func (g *groupReader) awaitCommitted(n int32, past map[int32]int64) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		got := map[int32]int64{}
		if offs, err := g.c.Admin().FetchOffsets(ctx, g.group); err == nil {
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == g.topic && o.Err == nil {
					got[o.Partition] = o.At
				}
			})
		}
		ok := true
		for p := range n {
			ok = ok && got[p] > past[p]
		}
		if ok {
			return got, nil
		}
		if ctx.Err() != nil {
			return got, fmt.Errorf("group %s's committed offsets %v never passed %v on all %d partitions of %s", g.group, got, past, n, g.topic)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// watchReplicas logs, while a change runs, what the executor's polls see:
// the topic's replica counts in Metadata, the reassignments the controller
// lists, and the operation's recorded progress, each time they change.
func watchReplicas(t *testing.T, c *kafkatest.Cluster, cl *kafka.Client, topic string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := ""
		for start := time.Now(); ctx.Err() == nil; time.Sleep(time.Second) {
			var reps []string
			if md, err := c.Admin().Metadata(ctx, topic); err == nil {
				for _, p := range md.Topics[topic].Partitions.Sorted() {
					reps = append(reps, fmt.Sprintf("p%d%v", p.Partition, p.Replicas))
				}
			}
			rs, _ := cl.ListReassignments(ctx)
			var reass []string
			for _, r := range rs {
				reass = append(reass, fmt.Sprintf("%s p%d adding %v removing %v", r.Topic, r.Partition, r.Adding, r.Removing))
			}
			opState := "none"
			if op, err := cl.Operations().Load(ctx, "topic/"+c.ClusterID()+"/"+topic); err == nil && op != nil {
				opState = fmt.Sprintf("%s phase %s group %d steps submitted %d", op.ID, op.Phase, op.Group, op.StepsSubmitted)
			}
			now := fmt.Sprintf("replicas %v; reassigning %v; operation %s", reps, reass, opState)
			if now != last {
				t.Logf("%s: %s", time.Since(start).Round(time.Second), now)
				last = now
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

// produceKeyed writes n records keyed customer-0 … customer-(n-1) to topic,
// spread by the default partitioner.
func produceKeyed(servers []string, topic string, n int) error {
	pr, err := kgo.NewClient(kgo.SeedBrokers(servers...))
	if err != nil {
		return err
	}
	defer pr.Close()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint("customer-", i)), Value: []byte("x")})
	}
	return pr.ProduceSync(context.Background(), recs...).FirstErr()
}
