package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// saslOf builds a client from cfg and returns the SASL mechanism its kgo
// options carry: what every connection will log in with.
func saslOf(t *testing.T, cfg Config) sasl.Mechanism {
	t.Helper()
	if len(cfg.BootstrapServers) == 0 {
		cfg.BootstrapServers = []string{"127.0.0.1:9092"}
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(c.Close)
	ms, _ := c.kgo.OptValue(kgo.SASL).([]sasl.Mechanism)
	if len(ms) != 1 {
		t.Fatalf("the client's options hold %d SASL mechanisms, want 1", len(ms))
	}
	return ms[0]
}

// isolateAWS leaves the AWS default chain only the environment: no shared
// files, no profile, no instance metadata.
func isolateAWS(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{"AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_REGION", "eu-west-1")
}

// MSK IAM cannot be tested against MSK here: this pins the wiring. The
// client's options carry the AWS_MSK_IAM mechanism, and the first message
// it would send a broker is signed with the credentials the AWS SDK's
// default chain found, here in the environment.
func TestMSKIAMSignsWithTheDefaultChain(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAKAFKASCALETEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
	t.Setenv("AWS_SESSION_TOKEN", "session-token-from-env")

	const broker = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"
	m := saslOf(t, Config{BootstrapServers: []string{broker}, SASL: &SASLConfig{Mechanism: MechanismAWSMSKIAM}})
	if m.Name() != "AWS_MSK_IAM" {
		t.Fatalf("mechanism %q, want AWS_MSK_IAM", m.Name())
	}
	_, first, err := m.Authenticate(context.Background(), broker)
	if err != nil {
		t.Fatalf("signing the login: %v", err)
	}
	var msg map[string]string
	if err := json.Unmarshal(first, &msg); err != nil {
		t.Fatalf("the login message is not JSON: %v: %s", err, first)
	}
	if got := msg["x-amz-credential"]; !strings.HasPrefix(got, "AKIAKAFKASCALETEST/") || !strings.Contains(got, "/eu-west-1/kafka-cluster/") {
		t.Errorf("x-amz-credential %q, want the access key from the environment, scoped to eu-west-1 kafka-cluster", got)
	}
	if got := msg["x-amz-security-token"]; got != "session-token-from-env" {
		t.Errorf("x-amz-security-token %q, want the session token from the environment", got)
	}
	if msg["action"] != "kafka-cluster:Connect" || msg["x-amz-signature"] == "" {
		t.Errorf("login message %v: want a signed kafka-cluster:Connect", msg)
	}
	if strings.Contains(string(first), "not-a-real-secret") {
		t.Error("the login message carries the secret key itself")
	}
}

// With no credentials anywhere, the login fails before any broker is
// asked, and the error says where credentials were looked for.
func TestMSKIAMWithoutCredentials(t *testing.T) {
	isolateAWS(t)
	c, err := NewClient(Config{BootstrapServers: []string{"127.0.0.1:9098"}, SASL: &SASLConfig{Mechanism: MechanismAWSMSKIAM}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ms, _ := c.kgo.OptValue(kgo.SASL).([]sasl.Mechanism)
	_, _, err = ms[0].Authenticate(context.Background(), "127.0.0.1:9098")
	var ce *CredentialError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a CredentialError", err)
	}
	ae := c.authError(err)
	if ae == nil || !strings.Contains(ae.Error(), "SASL authentication (AWS_MSK_IAM) failed before any broker was asked: could not obtain AWS credentials from the default chain") {
		t.Fatalf("auth error %v: want it to name AWS_MSK_IAM and the default chain", ae)
	}
}

func TestOAuthBearerStaticToken(t *testing.T) {
	m := saslOf(t, Config{SASL: &SASLConfig{Mechanism: MechanismOAuthBearer, OAuth: OAuthConfig{Token: "header.claims."}}})
	_, first, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "OAUTHBEARER" || !strings.Contains(string(first), "auth=Bearer header.claims.\x01") {
		t.Fatalf("%s sends %q, want the static token as the bearer", m.Name(), first)
	}
}

// tokenEndpoint stands in for an identity provider: it checks the client
// credentials grant and hands out numbered tokens.
func tokenEndpoint(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if err := r.ParseForm(); err != nil {
			t.Errorf("token request: %v", err)
		}
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		if r.PostForm.Get("grant_type") != "client_credentials" || id != "kafkascale" || secret != "s3cret" || r.PostForm.Get("scope") != "kafka offline" {
			t.Errorf("token request: grant %q, client %q/%q, scope %q", r.PostForm.Get("grant_type"), id, secret, r.PostForm.Get("scope"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"unknown client"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "token-" + strconv.Itoa(int(n)), "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// Client credentials: the token comes from the endpoint, and is reused by
// the next connection instead of being fetched again.
func TestOAuthBearerClientCredentials(t *testing.T) {
	srv, calls := tokenEndpoint(t, http.StatusOK)
	m := saslOf(t, Config{SASL: &SASLConfig{Mechanism: MechanismOAuthBearer, OAuth: OAuthConfig{
		TokenEndpointURL: srv.URL, ClientID: "kafkascale", ClientSecret: "s3cret", Scopes: []string{"kafka", "offline"},
	}}})
	for i := range 3 {
		_, first, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
		if err != nil {
			t.Fatalf("login %d: %v", i, err)
		}
		if !strings.Contains(string(first), "auth=Bearer token-1\x01") {
			t.Fatalf("login %d sends %q, want the endpoint's first token", i, first)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the token endpoint was called %d times for 3 logins, want 1 (the token is cached until it nears expiry)", n)
	}
}

// A refused client fails the login before a broker is asked, naming the
// endpoint and client, never the secret.
func TestOAuthBearerEndpointRefuses(t *testing.T) {
	srv, _ := tokenEndpoint(t, http.StatusUnauthorized)
	cfg := Config{BootstrapServers: []string{"127.0.0.1:9092"}, SASL: &SASLConfig{Mechanism: MechanismOAuthBearer, OAuth: OAuthConfig{
		TokenEndpointURL: srv.URL, ClientID: "kafkascale", ClientSecret: "s3cret", Scopes: []string{"kafka", "offline"},
	}}}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ms, _ := c.kgo.OptValue(kgo.SASL).([]sasl.Mechanism)
	_, _, err = ms[0].Authenticate(context.Background(), "127.0.0.1:9092")
	ae := c.authError(err)
	if ae == nil {
		t.Fatalf("%v is not classified as an authentication failure", err)
	}
	msg := ae.Error()
	for _, want := range []string{"OAUTHBEARER", `client "kafkascale"`, srv.URL, "invalid_client"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %s", msg, want)
		}
	}
	if strings.Contains(msg, "s3cret") {
		t.Errorf("error %q carries the client secret", msg)
	}
}

func TestOAuthBearerNeedsOneTokenSource(t *testing.T) {
	for name, o := range map[string]OAuthConfig{
		"none":                {},
		"both":                {Token: "t", TokenEndpointURL: "https://idp.example/token", ClientID: "c"},
		"endpoint, no client": {TokenEndpointURL: "https://idp.example/token"},
	} {
		_, err := NewClient(Config{BootstrapServers: []string{"127.0.0.1:9092"}, SASL: &SASLConfig{Mechanism: MechanismOAuthBearer, OAuth: o}})
		if err == nil || !strings.Contains(err.Error(), "OAUTHBEARER") {
			t.Errorf("%s: got %v, want an error naming OAUTHBEARER", name, err)
		}
	}
}

// The environment completes what the configuration leaves out, for the
// mechanism in use only.
func TestFillDefaultsByMechanism(t *testing.T) {
	env := map[string]string{
		EnvSASLMechanism: MechanismOAuthBearer, EnvSASLUsername: "u", EnvSASLPassword: "p",
		EnvSASLTokenEndpointURL: "https://idp.example/token", EnvSASLClientID: "id", EnvSASLClientSecret: "secret", EnvSASLScopes: "a  b",
	}
	getenv := func(k string) string { return env[k] }

	s := &SASLConfig{}
	s.FillDefaults(getenv)
	want := OAuthConfig{TokenEndpointURL: "https://idp.example/token", ClientID: "id", ClientSecret: "secret", Scopes: []string{"a", "b"}}
	if s.Mechanism != MechanismOAuthBearer || s.Username != "" || s.OAuth.TokenEndpointURL != want.TokenEndpointURL ||
		s.OAuth.ClientID != "id" || s.OAuth.ClientSecret != "secret" || strings.Join(s.OAuth.Scopes, " ") != "a b" {
		t.Errorf("from the environment: %+v, want OAUTHBEARER with %+v and no username", s, want)
	}

	// A static token in the configuration is the token source: the
	// environment's endpoint is not mixed in.
	s = &SASLConfig{Mechanism: MechanismOAuthBearer, OAuth: OAuthConfig{Token: "t"}}
	s.FillDefaults(getenv)
	if s.OAuth.TokenEndpointURL != "" || s.OAuth.ClientSecret != "" {
		t.Errorf("static token: %+v, want no client credentials", s.OAuth)
	}

	s = &SASLConfig{Mechanism: MechanismScramSHA256}
	s.FillDefaults(getenv)
	if s.Username != "u" || s.Password != "p" || s.OAuth.TokenEndpointURL != "" {
		t.Errorf("SCRAM: %+v, want the username and password from the environment only", s)
	}
}

// The environment turns SASL on by a mechanism, a username or an
// OAUTHBEARER token source; a password or client secret alone does not,
// since neither says which mechanism or who.
func TestSASLFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{EnvSASLPassword: "p", EnvSASLClientSecret: "s"}, false},
		{map[string]string{EnvSASLMechanism: MechanismPlain}, true},
		{map[string]string{EnvSASLUsername: "u"}, true},
		{map[string]string{EnvSASLToken: "jwt"}, true},
		{map[string]string{EnvSASLTokenEndpointURL: "https://idp.example/token"}, true},
	} {
		if got := SASLFromEnvironment(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("SASLFromEnvironment(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

func TestTLSWithEnvironment(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		cfg  *TLSConfig
		env  map[string]string
		want *TLSConfig
		err  string
	}{
		{name: "nothing asks for TLS", want: nil},
		{name: "KAFKA_TLS=true: the system's CAs", env: map[string]string{EnvTLS: "true"}, want: &TLSConfig{}},
		{name: "a CA alone turns TLS on", env: map[string]string{EnvTLSCACert: "/etc/ca.pem"}, want: &TLSConfig{CACert: "/etc/ca.pem"}},
		{name: "KAFKA_TLS=false keeps it off", env: map[string]string{EnvTLS: "false", EnvTLSCACert: "/etc/ca.pem"}, want: nil},
		{name: "the configuration wins, the environment fills the rest",
			cfg:  &TLSConfig{CACert: "cfg-ca"},
			env:  map[string]string{EnvTLSCACert: "env-ca", EnvTLSServerName: "kafka.internal", EnvTLSInsecureSkipVerify: "1"},
			want: &TLSConfig{CACert: "cfg-ca", ServerName: "kafka.internal", InsecureSkipVerify: true}},
		{name: "not a boolean", env: map[string]string{EnvTLS: "yes please"}, err: `environment variable KAFKA_TLS is "yes please": want true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TLSWithEnvironment(tc.cfg, env(tc.env))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("got %+v (%v), want %+v", got, err, tc.want)
			}
		})
	}
	if d, err := RequestTimeoutFromEnvironment(env(map[string]string{EnvRequestTimeout: "2m"})); err != nil || d != 2*time.Minute {
		t.Errorf("KAFKA_REQUEST_TIMEOUT=2m read as %v (%v)", d, err)
	}
	if _, err := RequestTimeoutFromEnvironment(env(map[string]string{EnvRequestTimeout: "2h"})); err == nil {
		t.Error("KAFKA_REQUEST_TIMEOUT=2h was taken; want it refused above 1h")
	}
}
