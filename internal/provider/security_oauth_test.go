package provider_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// oauthProvider is a provider block over the secured cluster's OAUTHBEARER
// listener, with the CA inline and the given sasl attributes.
func oauthProvider(c *kafkatest.Cluster, a *kafkatest.SecureAccess, sasl string) string {
	return testAccProviderConfig(c.OAuthBootstrap(), fmt.Sprintf(`
  request_timeout = "30s"
  tls {
    ca_cert = %q
  }
  sasl {
    mechanism = "OAUTHBEARER"
    %s
  }`, a.CACertPEM, sasl))
}

// oauthTopic is a topic the super user may create: the token's sub is the
// principal, and the secured cluster's ACLs are enforced.
func oauthTopic(name string) string {
	return fmt.Sprintf(`
data "kafkascale_cluster" "c" {}

resource "kafkascale_topic" "t" {
  name               = %q
  partitions         = 3
  replication_factor = 3
}
`, name)
}

// tokenRequest is what the stand-in identity provider was asked.
type tokenRequest struct {
	grant, clientID, secret, scope string
}

// fakeIdP stands in for an identity provider's token endpoint, which
// cannot run here: it takes the client-credentials grant and issues
// unsigned tokens for sub. The broker that checks them is real (Kafka's
// unsecured validator), so only the signature is not exercised. It
// refuses every request when refuse is set.
type fakeIdP struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []tokenRequest
	issued   []string
}

func newFakeIdP(t *testing.T, sub string, refuse bool) *fakeIdP {
	f := &fakeIdP{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := tokenRequest{grant: r.PostForm.Get("grant_type"), scope: r.PostForm.Get("scope")}
		var ok bool
		if req.clientID, req.secret, ok = r.BasicAuth(); !ok {
			req.clientID, req.secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if refuse {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"client authentication failed"}`))
			return
		}
		tok := kafkatest.UnsecuredToken(sub, time.Hour)
		f.mu.Lock()
		f.issued = append(f.issued, tok)
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// tokens are the access tokens issued so far.
func (f *fakeIdP) tokens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.issued...)
}

func (f *fakeIdP) seen() []tokenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tokenRequest(nil), f.requests...)
}

// A static token, as a CI job's OIDC token would be passed: the data
// source reads the cluster and a topic is created, both through the
// OAUTHBEARER listener as the token's subject.
func TestAccSecurity_oauthStaticToken(t *testing.T) {
	c, a := securedCluster(t)
	config := oauthProvider(c, a, fmt.Sprintf("token = %q", kafkatest.UnsecuredToken(a.SuperUser.Username, time.Hour))) +
		oauthTopic("sec-oauth-static")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             topicGone(c, "sec-oauth-static"),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.kafkascale_cluster.c", tfjsonpath.New("cluster_id"), knownvalue.StringExact(c.ClusterID())),
				statecheck.ExpectKnownValue("data.kafkascale_cluster.c", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(3)),
			},
			Check: expectPartitions(c, "sec-oauth-static", 3),
		}},
	})
}

// Client credentials: the provider asks the token endpoint with its client
// id, secret and scopes, then reaches the broker with the token it got.
func TestAccSecurity_oauthClientCredentials(t *testing.T) {
	c, a := securedCluster(t)
	idp := newFakeIdP(t, a.SuperUser.Username, false)
	config := oauthProvider(c, a, fmt.Sprintf(`token_endpoint_url = %q
    client_id          = "kafkascale-ci"
    client_secret      = "cc-secret"
    scopes             = ["kafka", "kafka.admin"]`, idp.srv.URL+"/oauth2/token")) + oauthTopic("sec-oauth-cc")
	endpointAsked := func(*terraform.State) error {
		reqs := idp.seen()
		if len(reqs) == 0 {
			return fmt.Errorf("the token endpoint was never called")
		}
		for _, r := range reqs {
			if r != (tokenRequest{grant: "client_credentials", clientID: "kafkascale-ci", secret: "cc-secret", scope: "kafka kafka.admin"}) {
				return fmt.Errorf("the token endpoint was asked %+v, want the client-credentials grant for kafkascale-ci with scopes %q", r, "kafka kafka.admin")
			}
		}
		t.Logf("token endpoint called %d times", len(reqs))
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             topicGone(c, "sec-oauth-cc"),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.kafkascale_cluster.c", tfjsonpath.New("cluster_id"), knownvalue.StringExact(c.ClusterID())),
			},
			Check: resource.ComposeAggregateTestCheckFunc(expectPartitions(c, "sec-oauth-cc", 3), endpointAsked),
		}},
	})
}

// A token the broker refuses (expired), or no token at all (the identity
// provider refuses the client), fails at once with an error naming
// OAUTHBEARER and the token source, not as an unreachable cluster after
// request_timeout.
func TestAccSecurity_oauthRefused(t *testing.T) {
	c, a := securedCluster(t)
	const timeout = 30 * time.Second
	idp := newFakeIdP(t, a.SuperUser.Username, true)
	cases := []struct{ name, sasl, want string }{
		{
			name: "expired token",
			sasl: fmt.Sprintf("token = %q", kafkatest.UnsecuredToken(a.SuperUser.Username, -time.Minute)),
			want: `(?s)Kafka authentication failed.*SASL authentication with OAUTHBEARER failed.*Check the token source.*` +
				`SASL authentication \(OAUTHBEARER\) with a static token failed: the broker refused the token`,
		},
		{
			name: "identity provider refuses the client",
			sasl: fmt.Sprintf(`token_endpoint_url = %q
    client_id          = "kafkascale-ci"
    client_secret      = "wrong-secret"`, idp.srv.URL),
			want: `(?s)Kafka authentication failed.*SASL authentication \(OAUTHBEARER\) failed before any broker was asked: ` +
				`could not obtain a token for client "kafkascale-ci" from http://127\.0\.0\.1:\d+: .*invalid_client`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      oauthProvider(c, a, tc.sasl) + `data "kafkascale_cluster" "c" {}`,
					ExpectError: wrapped(tc.want),
				}},
			})
			if took := time.Since(began); took > timeout/3 {
				t.Errorf("the failure took %v; it must come well within request_timeout %v", took.Round(time.Millisecond), timeout)
			} else {
				t.Logf("failed after %v", took.Round(time.Millisecond))
			}
		})
	}
	if len(idp.seen()) == 0 {
		t.Error("the refusing token endpoint was never asked: the error cannot have come from it")
	}
}
