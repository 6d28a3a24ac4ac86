package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// The secured cluster is started once, by the first test that needs it.
// Only tests that run alone use it: it is stopped when the parallel tests
// begin (testAccParallel), or by TestMain when none runs.
var (
	secureOnce    sync.Once
	secureCluster *kafkatest.Cluster
	secureErr     error
)

func securedCluster(t *testing.T) (*kafkatest.Cluster, *kafkatest.SecureAccess) {
	t.Helper()
	testAccPreCheck(t)
	secureOnce.Do(func() {
		began := time.Now()
		secureCluster, secureErr = kafkatest.Start(context.Background(), kafkatest.Options{
			// The OAUTHBEARER listener costs one port per broker; the
			// oauth tests share this cluster rather than start their own.
			Brokers: 3, Racks: []string{"a", "b", "c"}, Security: &kafkatest.Security{OAuthBearer: true},
		})
		t.Logf("secured cluster started in %v", time.Since(began).Round(time.Millisecond))
	})
	if secureErr != nil {
		t.Fatalf("starting the secured Kafka cluster: %v", secureErr)
	}
	return secureCluster, secureCluster.Secure()
}

// saslProvider is a provider block over SASL_SSL with the CA inline.
func saslProvider(c *kafkatest.Cluster, a *kafkatest.SecureAccess, user kafkatest.Credentials, extra string) string {
	return testAccProviderConfig(c.SASLSSLBootstrap(), fmt.Sprintf(`
  tls {
    ca_cert = %q
  }
  sasl {
    mechanism = "SCRAM-SHA-512"
    username  = %q
    password  = %q
  }
  %s`, a.CACertPEM, user.Username, user.Password, extra))
}

// Wrong credentials must fail with an error that names the problem, and
// fail at once: a retry loop until request_timeout would hide the cause
// behind a timeout.
func TestAccSecurity_wrongCredentials(t *testing.T) {
	c, a := securedCluster(t)
	const timeout = 30 * time.Second
	wrongPassword := kafkatest.Credentials{Username: a.RestrictedUser.Username, Password: "not-" + a.RestrictedUser.Password}
	cases := []struct {
		name, config, want string
	}{
		{
			name:   "wrong password",
			config: saslProvider(c, a, wrongPassword, `request_timeout = "30s"`),
			want:   `(?s)Kafka authentication failed.*SASL authentication of user "reader" \(SCRAM-SHA-512\) failed`,
		},
		{
			name: "untrusted CA",
			config: testAccProviderConfig(c.SASLSSLBootstrap(), fmt.Sprintf(`
  request_timeout = "30s"
  tls {
    ca_cert = %q
  }
  sasl {
    username = %q
    password = %q
  }`, a.OtherCACertPEM, a.SuperUser.Username, a.SuperUser.Password)),
			want: `(?s)TLS handshake failed.*TLS handshake with 127\.0\.0\.1:\d+ failed: .*certificate signed by unknown authority`,
		},
		{
			name: "wrong server name",
			config: testAccProviderConfig(c.SSLBootstrap(), fmt.Sprintf(`
  request_timeout = "30s"
  tls {
    ca_cert     = %q
    client_cert = %q
    client_key  = %q
    server_name = "kafka.invalid"
  }`, a.CACertPEM, a.ClientCertPEM, a.ClientKeyPEM)),
			want: `(?s)TLS handshake failed.*TLS handshake with 127\.0\.0\.1:\d+ failed: .*certificate is valid for .*not kafka\.invalid`,
		},
		{
			name: "no client certificate on the mutual TLS listener",
			config: testAccProviderConfig(c.SSLBootstrap(), fmt.Sprintf(`
  request_timeout = "30s"
  tls {
    ca_cert = %q
  }`, a.CACertPEM)),
			want: `(?s)TLS handshake failed.*the broker refused this client's certificate`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config + `data "kafkascale_cluster" "c" {}`,
					ExpectError: wrapped(tc.want),
				}},
			})
			// Terraform itself takes a second or two; a retry loop would
			// take the whole request_timeout.
			if took := time.Since(began); took > timeout/3 {
				t.Errorf("the failure took %v; it must come well within request_timeout %v", took.Round(time.Millisecond), timeout)
			} else {
				t.Logf("failed after %v", took.Round(time.Millisecond))
			}
		})
	}
}

// topicPartitions counts a topic's partitions through the harness's own
// client; 0 when the topic does not exist.
func topicPartitions(t *testing.T, c *kafkatest.Cluster, topic string) int {
	t.Helper()
	td, err := c.Admin().ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatalf("describing topic %s: %v", topic, err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return 0
	}
	return len(d.Partitions)
}

func expectPartitions(c *kafkatest.Cluster, topic string, want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		td, err := c.Admin().ListTopics(context.Background(), topic)
		if err != nil {
			return err
		}
		if got := len(td[topic].Partitions); got != want || td[topic].Err != nil {
			return fmt.Errorf("topic %s has %d partitions (err %v), want %d", topic, got, td[topic].Err, want)
		}
		return nil
	}
}

func topicGone(c *kafkatest.Cluster, topics ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		td, err := c.Admin().ListTopics(context.Background(), topics...)
		if err != nil {
			return err
		}
		for _, topic := range topics {
			if d, ok := td[topic]; ok && d.Err == nil {
				return fmt.Errorf("topic %s still exists after destroy", topic)
			}
		}
		return nil
	}
}

// Over SASL_SSL with SCRAM-SHA-512 and the CA inline, the data source and
// a topic's whole life behave as on a plaintext cluster.
func TestAccSecurity_saslSSL(t *testing.T) {
	c, a := securedCluster(t)
	topic := `
resource "kafkascale_topic" "t" {
  name               = "sec-sasl"
  partitions         = %d
  replication_factor = 3
  config             = { "retention.ms" = "3600000" }
}
`
	ds := `data "kafkascale_cluster" "c" {}`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             topicGone(c, "sec-sasl"),
		Steps: []resource.TestStep{
			{
				Config: saslProvider(c, a, a.SuperUser, "") + ds + fmt.Sprintf(topic, 2),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.kafkascale_cluster.c", tfjsonpath.New("cluster_id"), knownvalue.StringExact(c.ClusterID())),
					statecheck.ExpectKnownValue("data.kafkascale_cluster.c", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(3)),
					statecheck.ExpectKnownValue("data.kafkascale_cluster.c", tfjsonpath.New("brokers").AtSliceIndex(0).AtMapKey("id"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue("kafkascale_topic.t", tfjsonpath.New("partitions"), knownvalue.Int64Exact(2)),
				},
				Check: expectPartitions(c, "sec-sasl", 2),
			},
			{
				Config: saslProvider(c, a, a.SuperUser, "") + ds + fmt.Sprintf(topic, 4),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kafkascale_topic.t", plancheck.ResourceActionUpdate),
				}},
				Check: expectPartitions(c, "sec-sasl", 4),
			},
		},
	})
}

// Over mutual TLS, with the CA as a file path and the client certificate
// inline, then as file paths: the same topic, no drift.
func TestAccSecurity_mutualTLS(t *testing.T) {
	c, a := securedCluster(t)
	inline := testAccProviderConfig(c.SSLBootstrap(), fmt.Sprintf(`
  tls {
    ca_cert     = %q
    client_cert = %q
    client_key  = %q
  }`, a.CACertFile, a.ClientCertPEM, a.ClientKeyPEM))
	files := testAccProviderConfig(c.SSLBootstrap(), fmt.Sprintf(`
  tls {
    ca_cert     = %q
    client_cert = %q
    client_key  = %q
  }`, a.CACertFile, a.ClientCertFile, a.ClientKeyFile))
	body := `
data "kafkascale_cluster" "c" {}

resource "kafkascale_topic" "t" {
  name               = "sec-mtls"
  partitions         = 3
  replication_factor = 2
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             topicGone(c, "sec-mtls"),
		Steps: []resource.TestStep{
			{
				Config: inline + body,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.kafkascale_cluster.c", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(3)),
				},
				Check: expectPartitions(c, "sec-mtls", 3),
			},
			{
				Config: files + body,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kafkascale_topic.t", plancheck.ResourceActionNoop),
				}},
			},
		},
	})
}

// A principal that may only read can plan, but every apply stops before it
// changes anything, naming the missing operation and resource: no
// partition is added, no broker is asked for, no throttle is left.
func TestAccSecurity_restrictedUser(t *testing.T) {
	c, a := securedCluster(t)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, 3, 2, nil, "orders"); err != nil {
		t.Fatalf("creating topic orders: %v", err)
	}
	// The operation log is an administrator's to create, once; with it in
	// place a principal that may only read can still refresh and plan.
	admin, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := admin.Operations().Ensure(ctx); err != nil {
		t.Fatalf("creating the operation log: %v", err)
	}
	defer c.Admin().DeleteTopics(context.Background(), "orders")

	var scalingCalls atomic.Int32
	api := kafkatest.NewScalingAPI(c, "local", "restricted-token")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			scalingCalls.Add(1)
		}
		api.ServeHTTP(w, r)
	}))
	defer func() { srv.Close(); api.Close() }()

	config := func(partitions, brokers int, withTopic bool) string {
		cfg := saslProvider(c, a, a.RestrictedUser, "") + fmt.Sprintf(`
import {
  to = kafkascale_cluster.main
  id = %q
}

resource "kafkascale_cluster" "main" {
  broker_count = %d
  scaling {
    http {
      endpoint   = %q
      cluster_id = "local"
    }
  }
}
`, c.ClusterID(), brokers, srv.URL)
		if withTopic {
			cfg += fmt.Sprintf(`
import {
  to = kafkascale_topic.orders
  id = "orders"
}

resource "kafkascale_topic" "orders" {
  name               = "orders"
  partitions         = %d
  replication_factor = 2
}
`, partitions)
		}
		return cfg
	}
	unchanged := func(*terraform.State) error {
		if n := topicPartitions(t, c, "orders"); n != 3 {
			return fmt.Errorf("topic orders has %d partitions after a refused apply, want 3", n)
		}
		if n := len(c.Brokers()); n != 3 {
			return fmt.Errorf("the cluster has %d brokers after a refused apply, want 3", n)
		}
		if n := scalingCalls.Load(); n != 0 {
			return fmt.Errorf("the scaling API received %d changing request(s) after a refused apply", n)
		}
		return noThrottles(ctx, c.Admin(), "orders")
	}
	t.Setenv("KAFKASCALE_SCALING_TOKEN", "restricted-token")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				// Importing only reads.
				Config: config(3, 3, true),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_topic.orders", tfjsonpath.New("partitions"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue("kafkascale_cluster.main", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(3)),
				},
			},
			{
				// Planning only reads, so it works.
				Config:             config(6, 4, true),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Both failures are reported, each naming what is missing.
				Config: config(6, 4, true),
				ExpectError: wrapped(`(?s)(principal User:reader lacks ALTER on topic "orders" \(needed to add partitions\).*` +
					`principal User:reader lacks ALTER on the cluster \(needed to reassign partitions and elect preferred leaders\)|` +
					`principal User:reader lacks ALTER on the cluster \(needed to reassign partitions and elect preferred leaders\).*` +
					`principal User:reader lacks ALTER on topic "orders" \(needed to add partitions\))`),
			},
			{
				// Removing the topic from the configuration would delete it.
				Config:      config(6, 3, false),
				ExpectError: wrapped(`principal User:reader lacks DELETE on topic "orders" \(needed to delete the topic\)`),
			},
			{
				// Forget both, so the test's destroy changes nothing either.
				Config: saslProvider(c, a, a.RestrictedUser, "") + `
removed {
  from = kafkascale_topic.orders
  lifecycle { destroy = false }
}

removed {
  from = kafkascale_cluster.main
  lifecycle { destroy = false }
}
`,
				Check: unchanged,
			},
		},
	})
	if err := unchanged(nil); err != nil {
		t.Error(err)
	}
}

// noThrottles fails if any broker or the topic carries a replication
// throttle.
func noThrottles(ctx context.Context, adm *kadm.Client, topic string) error {
	brokers, err := adm.DescribeBrokerConfigs(ctx)
	if err != nil {
		return err
	}
	for _, b := range brokers {
		for _, cfg := range b.Configs {
			if strings.Contains(cfg.Key, "replication.throttled") && (cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig || cfg.Source == kmsg.ConfigSourceDynamicDefaultBrokerConfig) && cfg.MaybeValue() != "" {
				return fmt.Errorf("broker %s has %s=%s after a refused apply", b.Name, cfg.Key, cfg.MaybeValue())
			}
		}
	}
	topics, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return err
	}
	for _, tc := range topics {
		for _, cfg := range tc.Configs {
			if strings.Contains(cfg.Key, "throttled.replicas") && cfg.MaybeValue() != "" {
				return fmt.Errorf("topic %s has %s=%s after a refused apply", topic, cfg.Key, cfg.MaybeValue())
			}
		}
	}
	return nil
}

// A full apply and destroy with every log at TRACE, provider logs
// included, must leave no secret in the log, the plan or the state: not
// the SASL password, not the client key, not the scaling API token, not
// the OAuth client secret nor the tokens the identity provider issued.
func TestAccSecurity_noSecretLeaks(t *testing.T) {
	c, a := securedCluster(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "terraform.log")
	// TF_ACC_LOG_PATH sends both Terraform's log and the in-process
	// provider's (terraform-plugin-log's test sink) to one file, at TRACE.
	t.Setenv("TF_ACC_LOG_PATH", logPath)
	t.Setenv("TF_ACC_LOG", "TRACE")
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_LOG_PATH_MASK", "")
	// terraform-plugin-testing's own logger echoes each step's HCL, which
	// this test wrote with the secrets inline; that echo is the test's,
	// not Terraform's or the provider's, whose logs all stay at TRACE.
	t.Setenv("TF_LOG_SDK_HELPER_RESOURCE", "OFF")
	// The token is in the configuration as token_wo, write-only, so it must
	// reach neither the plan nor the state. A Terraform older than 1.11
	// has no write-only attributes: there it comes from the environment.
	// So are the Prometheus bearer token and basic-auth password, in
	// bearer_token_wo (step 1) and basic_auth.password_wo (step 2). No
	// Prometheus answers at the URL: the plan's check only warns, and an
	// apply that keeps the count queries nothing.
	const token = "scaling-token-6f1e9a0c2b"
	const promToken, promPassword = "prometheus-token-81c4d2", "prometheus-password-5be07a"
	tokenLine := `token_wo   = "` + token + `"`
	metricsBlocks := [2]string{
		`bearer_token_wo = "` + promToken + `"`,
		`basic_auth {
        username    = "kafkascale"
        password_wo = "` + promPassword + `"
      }`,
	}
	if !writeOnlySupported() {
		t.Setenv("KAFKASCALE_SCALING_TOKEN", token)
		tokenLine = ""
		metricsBlocks = [2]string{}
	}

	var authorized atomic.Int32
	api := kafkatest.NewScalingAPI(c, "local", token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+token {
			authorized.Add(1)
		}
		api.ServeHTTP(w, r)
	}))
	defer func() { srv.Close(); api.Close() }()

	idp := newFakeIdP(t, a.SuperUser.Username, false)
	const clientSecret = "oauth-client-secret-3d7c51"
	keyBody := pemBody(a.ClientKeyPEM)
	secrets := map[string]string{
		"SASL password":       a.SuperUser.Password,
		"client key":          keyBody,
		"scaling API token":   token,
		"OAuth client secret": clientSecret,
		"Prometheus token":    promToken,
		"Prometheus password": promPassword,
	}
	leaks := func(where string, b []byte) error {
		var found []string
		all := maps.Clone(secrets)
		for i, tok := range idp.tokens() {
			all[fmt.Sprintf("OAuth access token %d", i+1)] = tok
		}
		for name, v := range all {
			if i := strings.Index(string(b), v); i >= 0 {
				// Show where, with the secret itself masked.
				around := string(b[max(0, i-300):min(len(b), i+len(v)+100)])
				found = append(found, fmt.Sprintf("%s (at: %q)", name, strings.ReplaceAll(around, v, "<"+name+">")))
			}
		}
		if len(found) > 0 {
			return fmt.Errorf("%s holds the %s", where, strings.Join(found, ", "))
		}
		return nil
	}
	// Each provider is served on its own (see testAccProviderFactoriesNamed),
	// so that each topic is created through its own listener and login.
	config := func(metricsAuth string) string {
		return saslProvider(c, a, a.SuperUser, "") + testAccNamedProviderConfig("kafkascalemtls", c.SSLBootstrap(), fmt.Sprintf(`
  tls {
    ca_cert     = %q
    client_cert = %q
    client_key  = %q
  }`, a.CACertPEM, a.ClientCertPEM, a.ClientKeyPEM)) + testAccNamedProviderConfig("kafkascaleoauth", c.OAuthBootstrap(), fmt.Sprintf(`
  tls {
    ca_cert = %q
  }
  sasl {
    mechanism          = "OAUTHBEARER"
    token_endpoint_url = %q
    client_id          = "kafkascale-ci"
    client_secret      = %q
  }`, a.CACertPEM, idp.srv.URL, clientSecret)) + fmt.Sprintf(`
resource "kafkascale_cluster" "main" {
  broker_count = 3
  scaling {
    http {
      endpoint   = %q
      cluster_id = "local"
      %s
    }
  }
  rebalance {
    metrics {
      prometheus_url = "http://127.0.0.1:1"
      %s
    }
  }
}

resource "kafkascale_topic" "sasl" {
  name               = "sec-leak-sasl"
  partitions         = 2
  replication_factor = 2
}

resource "kafkascale_topic" "mtls" {
  provider           = kafkascalemtls
  name               = "sec-leak-mtls"
  partitions         = 2
  replication_factor = 2
}

resource "kafkascale_topic" "oauth" {
  provider           = kafkascaleoauth
  name               = "sec-leak-oauth"
  partitions         = 2
  replication_factor = 2
}
`, srv.URL, tokenLine, metricsAuth)
	}
	step := func(metricsAuth string) resource.TestStep {
		return resource.TestStep{
			Config: config(metricsAuth),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				planCheckFunc(func(req plancheck.CheckPlanRequest) error {
					b, err := json.Marshal(req.Plan)
					if err != nil {
						return err
					}
					return leaks("the plan", b)
				}),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				stateCheckFunc(func(req statecheck.CheckStateRequest) error {
					b, err := json.Marshal(req.State)
					if err != nil {
						return err
					}
					if !strings.Contains(string(b), "sec-leak-mtls") {
						return errors.New("the state does not hold the topics: nothing to search")
					}
					return leaks("the state", b)
				}),
			},
			Check: resource.ComposeAggregateTestCheckFunc(expectPartitions(c, "sec-leak-mtls", 2), expectPartitions(c, "sec-leak-oauth", 2)),
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactoriesNamed("kafkascalemtls", "kafkascaleoauth"),
		CheckDestroy:             topicGone(c, "sec-leak-sasl", "sec-leak-mtls", "sec-leak-oauth"),
		Steps:                    []resource.TestStep{step(metricsBlocks[0]), step(metricsBlocks[1])},
	})
	if len(idp.tokens()) == 0 {
		t.Error("the identity provider issued no token: the OAUTHBEARER provider never logged in")
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// The log must be the full one, Terraform's and the provider's, or a
	// clean result proves nothing.
	for _, want := range []string{"configured Kafka client", "created topic", "[TRACE]"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the TRACE log (%d bytes) lacks %q: the provider's logs did not reach it", len(raw), want)
		}
	}
	if err := leaks("the TRACE log", raw); err != nil {
		t.Error(err)
	}
	t.Logf("searched a %d-byte TRACE log, the plan and the state; the scaling API saw the token on %d request(s)", len(raw), authorized.Load())
}

// pemBody is the base64 body of a PEM block, without its armour lines:
// what a leaked key would show even if re-wrapped.
func pemBody(p string) string {
	var body []string
	for _, l := range strings.Split(strings.TrimSpace(p), "\n") {
		if !strings.HasPrefix(l, "-----") {
			body = append(body, l)
		}
	}
	return strings.Join(body, "")[:40]
}

type planCheckFunc func(plancheck.CheckPlanRequest) error

func (f planCheckFunc) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = f(req)
}

type stateCheckFunc func(statecheck.CheckStateRequest) error

func (f stateCheckFunc) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	resp.Error = f(req)
}

// Connection settings kept only in the environment, as HCP Terraform's
// workspace variables keep them, under an empty provider block: the
// bootstrap servers, the CA, the request timeout and the SASL credentials.
// The provider turns TLS and SASL on from them, as the kafkascale command
// does, and creates a topic over SASL_SSL; a wrong password from the
// environment fails on authentication, not on a connection that silently
// went without SASL.
func TestAccSecurity_connectionFromEnvironmentOnly(t *testing.T) {
	c, a := securedCluster(t)
	const emptyProvider = `provider "kafkascale" {}
`
	t.Setenv(kafka.EnvBootstrapServers, strings.Join(c.SASLSSLBootstrap(), ","))
	t.Setenv(kafka.EnvTLSCACert, a.CACertPEM)
	t.Setenv(kafka.EnvRequestTimeout, "30s")
	topic := `
resource "kafkascale_topic" "t" {
  name               = "sec-env"
  partitions         = 3
  replication_factor = 3
}
`
	t.Setenv(kafka.EnvSASLMechanism, kafka.MechanismScramSHA512)
	t.Setenv(kafka.EnvSASLUsername, a.SuperUser.Username)
	t.Setenv(kafka.EnvSASLPassword, a.SuperUser.Password)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             topicGone(c, "sec-env"),
		Steps: []resource.TestStep{{
			Config: emptyProvider + topic,
			Check:  expectPartitions(c, "sec-env", 3),
		}},
	})

	t.Setenv(kafka.EnvSASLMechanism, "") // the username alone turns SASL on
	t.Setenv(kafka.EnvSASLPassword, "not-"+a.SuperUser.Password)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      emptyProvider + `data "kafkascale_cluster" "c" {}`,
			ExpectError: wrapped(`(?s)Kafka authentication failed.*SASL authentication of user "admin" \(SCRAM-SHA-512\) failed`),
		}},
	})
}
