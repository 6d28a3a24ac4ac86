package provider_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/provider"
)

// testAccProtoV6ProviderFactories runs the provider in-process, so the
// acceptance tests need no registry and no installed provider binary.
var testAccProtoV6ProviderFactories = testAccProviderFactoriesNamed()

// testAccProviderConfig renders a provider block for the given servers.
func testAccProviderConfig(servers []string, extra string) string {
	return testAccNamedProviderConfig("kafkascale", servers, extra)
}

// testAccNamedProviderConfig renders the block of the provider that
// testAccProviderFactoriesNamed serves as name.
func testAccNamedProviderConfig(name string, servers []string, extra string) string {
	quoted := make([]string, len(servers))
	for i, s := range servers {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf(`
provider %q {
  bootstrap_servers = [%s]
  %s
}
`, name, strings.Join(quoted, ", "), extra)
}

// testAccProviderFactoriesNamed serves the provider under "kafkascale" and
// each of names, every one from its own server. A test that needs two
// differently configured providers must use these instead of aliases:
// Terraform reaches every alias of an in-process provider through the one
// server, where the last ConfigureProvider wins, so all the aliases would
// share whichever configuration came last.
func testAccProviderFactoriesNamed(names ...string) map[string]func() (tfprotov6.ProviderServer, error) {
	f := map[string]func() (tfprotov6.ProviderServer, error){
		"kafkascale": providerserver.NewProtocol6WithError(provider.New("test")()),
	}
	for _, n := range names {
		f[n] = providerserver.NewProtocol6WithError(provider.New("test")())
	}
	return f
}

// Configuration errors must be reported on the attribute before any network
// call; these tests run Terraform but need no cluster.
func TestProvider_invalidConfiguration(t *testing.T) {
	os.Unsetenv(provider.EnvBootstrapServers)
	cases := []struct {
		name   string
		config string
		want   string
	}{
		{"no port", testAccProviderConfig([]string{"127.0.0.1"}, ""), `(?s)Invalid server address.*"127.0.0.1" is not host:port`},
		{"bad port", testAccProviderConfig([]string{"127.0.0.1:70000"}, ""), `(?s)port "70000" is not between 1 and 65535`},
		{"empty list", testAccProviderConfig(nil, ""), `(?s)bootstrap_servers.*at least 1`},
		{"bad timeout", testAccProviderConfig([]string{"127.0.0.1:9092"}, `request_timeout = "soon"`), `(?s)Invalid duration.*"soon" is not a duration`},
		{"timeout too short", testAccProviderConfig([]string{"127.0.0.1:9092"}, `request_timeout = "10ms"`), `(?s)request_timeout out of range.*request_timeout is "10ms", but it must be between 1s and 1h.*Set it within that range`},
		{"bad mechanism", testAccProviderConfig([]string{"127.0.0.1:9092"}, `sasl {
    mechanism = "GSSAPI"
    username  = "u"
  }`), `(?s)sasl.mechanism.*value must be one of`},
		{"key without cert", testAccProviderConfig([]string{"127.0.0.1:9092"}, `tls {
    client_key = "key.pem"
  }`), `(?s)tls.client_cert.*must be specified`},
		{"unreadable CA", testAccProviderConfig([]string{"127.0.0.1:9092"}, `tls {
    ca_cert = "/nonexistent/ca.pem"
  }`), `tls.ca_cert is neither inline PEM nor a readable file`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config + `data "kafkascale_cluster" "c" {}`,
					ExpectError: wrapped(tc.want),
				}},
			})
		})
	}
}

func TestProvider_missingBootstrapServers(t *testing.T) {
	t.Setenv(provider.EnvBootstrapServers, "")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      `provider "kafkascale" {}` + "\n" + `data "kafkascale_cluster" "c" {}`,
			ExpectError: regexp.MustCompile(`(?s)Missing bootstrap servers.*KAFKA_BOOTSTRAP_SERVERS`),
		}},
	})
}

// An unreachable cluster must fail within the request timeout, naming the
// servers it tried, instead of hanging.
func TestProvider_unreachableCluster(t *testing.T) {
	addr := closedPort(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: testAccProviderConfig([]string{addr}, `request_timeout = "2s"`) + `data "kafkascale_cluster" "c" {}`,
			ExpectError: wrapped(`(?s)Kafka cluster unreachable.*no answer from the Kafka cluster at ` +
				regexp.QuoteMeta(addr) + ` within 2s`),
		}},
	})
}

// Each mechanism's attributes are refused under another mechanism, at the
// attribute, and what a mechanism needs is asked for by name; no cluster
// is needed, as none of this reaches the network.
func TestProvider_saslSettingsByMechanism(t *testing.T) {
	for _, k := range []string{kafka.EnvSASLMechanism, kafka.EnvSASLUsername, kafka.EnvSASLPassword, kafka.EnvSASLToken,
		kafka.EnvSASLTokenEndpointURL, kafka.EnvSASLClientID, kafka.EnvSASLClientSecret, kafka.EnvSASLScopes} {
		t.Setenv(k, "")
	}
	sasl := func(body string) string {
		return testAccProviderConfig([]string{"127.0.0.1:9092"}, "sasl {\n"+body+"\n  }")
	}
	cases := []struct{ name, config, want string }{
		{"token under PLAIN", sasl(`mechanism = "PLAIN"
    username = "u"
    token = "t"`), `(?s)SASL setting not used by PLAIN.*token = "t".*sasl.token applies only to OAUTHBEARER, but the mechanism is PLAIN \(sasl.mechanism\)`},
		{"token under the default mechanism", sasl(`username = "u"
    token = "t"`), `(?s)sasl.token applies only to OAUTHBEARER, but the mechanism is SCRAM-SHA-512 \(the default\)`},
		{"username under OAUTHBEARER", sasl(`mechanism = "OAUTHBEARER"
    username = "u"
    token = "t"`), `(?s)sasl.username applies only to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, but the mechanism is OAUTHBEARER`},
		{"password under AWS_MSK_IAM", sasl(`mechanism = "AWS_MSK_IAM"
    password = "p"`), `(?s)SASL setting not used by AWS_MSK_IAM.*sasl.password applies only to PLAIN`},
		{"scopes under AWS_MSK_IAM", sasl(`mechanism = "AWS_MSK_IAM"
    token_endpoint_url = "https://idp.example/token"
    scopes = ["kafka"]`), `(?s)sasl.scopes applies only to OAUTHBEARER`},
		{"OAUTHBEARER without a token source", sasl(`mechanism = "OAUTHBEARER"`),
			`(?s)Missing OAUTHBEARER token source.*set sasl.token \(or KAFKA_SASL_OAUTH_TOKEN\), or sasl.token_endpoint_url`},
		{"static token and endpoint", sasl(`mechanism = "OAUTHBEARER"
    token = "t"
    token_endpoint_url = "https://idp.example/token"`), `(?s)Invalid Attribute Combination.*token_endpoint_url`},
		{"endpoint without a secret", sasl(`mechanism = "OAUTHBEARER"
    token_endpoint_url = "https://idp.example/token"
    client_id = "kafkascale"`), `(?s)Missing OAuth client secret.*https://idp.example/token needs sasl.client_secret or the KAFKA_SASL_OAUTH_CLIENT_SECRET`},
		{"client id without an endpoint", sasl(`mechanism = "OAUTHBEARER"
    token = "t"
    client_id = "kafkascale"`), `(?s)sasl.token_endpoint_url.*must be specified`},
		{"endpoint not a URL", sasl(`mechanism = "OAUTHBEARER"
    token_endpoint_url = "idp.example/token"
    client_id = "kafkascale"
    client_secret = "s"`), `(?s)Invalid URL.*must start with http:// or https://`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      tc.config + `data "kafkascale_cluster" "c" {}`,
					ExpectError: wrapped(tc.want),
				}},
			})
		})
	}
}
