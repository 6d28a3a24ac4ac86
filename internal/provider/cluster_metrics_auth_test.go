package provider_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// metricsAuthConfig is a cluster resource whose rebalance block holds the
// metrics block given, against a closed port: validation runs before any
// connection, so a refused config fails without Kafka.
func metricsAuthConfig(addr, metricsBody string) string {
	return testAccProviderConfig([]string{addr}, `request_timeout = "2s"`) + fmt.Sprintf(`
resource "kafkascale_cluster" "test" {
  broker_count = 3
  scaling {
    external {}
  }
  rebalance {
    metrics {
      prometheus_url = "https://127.0.0.1:9090"
      %s
    }
  }
}
`, metricsBody)
}

// The metrics block's login settings are refused at validation, on the
// attribute at fault (Terraform shows its line, 25); a complete one passes
// on to the cluster.
func TestClusterResource_metricsAuthValidation(t *testing.T) {
	addr := closedPort(t)
	const pemCA = `<<-EOT
        -----BEGIN CERTIFICATE-----
        MIIBdzCCAR2gAwIBAgIBATAKBggqhkjOPQQDAjASMRAwDgYDVQQDEwd0ZXN0IENB
        -----END CERTIFICATE-----
      EOT`
	cases := []struct{ name, body, want string }{
		{"basic auth and bearer token", `bearer_token = "t"
      basic_auth {
        username = "u"
        password = "p"
      }`, `(?s)Both basic_auth and bearer_token.*25: bearer_token = "t".*set either the basic_auth block or bearer_token, not both`},
		{"basic auth without password", `basic_auth {
        username = "u"
      }`, `(?s)Missing basic_auth password.*25: basic_auth \{.*needs the password`},
		{"basic auth without username", `basic_auth {
        password = "p"
      }`, `(?s)Missing basic_auth username.*25: basic_auth \{.*needs the user name`},
		{"empty bearer token", `bearer_token = ""`, `(?s)Empty bearer_token.*25: bearer_token = "".*bearer_token is empty`},
		{"CA that is not PEM", `ca_cert = "/etc/ssl/ca.pem"`, `(?s)Invalid ca_cert.*25: ca_cert = "/etc/ssl/ca.pem".*holds no PEM certificate`},
		{"CA whose PEM is not a certificate", `ca_cert = ` + pemCA, `(?s)Invalid ca_cert.*25: ca_cert = <<-EOT.*holds no PEM certificate`},
		// Valid settings get past validation to the (closed) cluster.
		{"basic auth", `basic_auth {
        username = "u"
        password = "p"
      }`, `(?s)Kafka cluster unreachable.*` + regexp.QuoteMeta(addr)},
		{"bearer token", `bearer_token = "t"`, `(?s)Kafka cluster unreachable.*` + regexp.QuoteMeta(addr)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: metricsAuthConfig(addr, tc.body), ExpectError: wrapped(tc.want)}},
			})
		})
	}
}
