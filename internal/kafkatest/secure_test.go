package kafkatest_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// A secured cluster must enforce what it promises: SCRAM passwords, client
// certificates and the restricted user's ACLs, while the harness's own
// client keeps working.
func TestSecureCluster(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 1, Security: &kafkatest.Security{}})
	a := c.Secure()
	if a == nil || len(c.SASLSSLBootstrap()) != 1 || len(c.SSLBootstrap()) != 1 {
		t.Fatalf("secured cluster: access %v, SASL_SSL %v, SSL %v", a, c.SASLSSLBootstrap(), c.SSLBootstrap())
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The super user over SASL_SSL creates a topic.
	cl, adm, err := c.SuperUserClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "secured"); err != nil {
		t.Fatalf("super user creating a topic over SASL_SSL: %v", err)
	}

	// The restricted user reads it but may not grow it.
	tc, err := a.TLSConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	reader := client(t, kgo.SeedBrokers(c.SASLSSLBootstrap()...), kgo.DialTLSConfig(tc),
		kgo.SASL(scram.Auth{User: a.RestrictedUser.Username, Pass: a.RestrictedUser.Password}.AsSha512Mechanism()))
	radm := kadm.NewClient(reader)
	td, err := radm.ListTopics(ctx, "secured")
	if err != nil || td["secured"].Err != nil {
		t.Fatalf("restricted user describing the topic: %v %v", err, td["secured"].Err)
	}
	resp, err := radm.CreatePartitions(ctx, 2, "secured")
	if err != nil {
		t.Fatal(err)
	}
	if err := resp["secured"].Err; !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("restricted user growing a topic: got %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// A wrong password is refused.
	wrong := client(t, kgo.SeedBrokers(c.SASLSSLBootstrap()...), kgo.DialTLSConfig(tc), kgo.RequestRetries(0),
		kgo.SASL(scram.Auth{User: a.RestrictedUser.Username, Pass: "not-" + a.RestrictedUser.Password}.AsSha512Mechanism()))
	if _, err := kadm.NewClient(wrong).BrokerMetadata(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: got %v, want SASL_AUTHENTICATION_FAILED", err)
	}

	// The client certificate is the super user over mutual TLS; without
	// it the SSL listener refuses the connection.
	mtls, err := a.TLSConfig(true)
	if err != nil {
		t.Fatal(err)
	}
	cert := client(t, kgo.SeedBrokers(c.SSLBootstrap()...), kgo.DialTLSConfig(mtls))
	if _, err := kadm.NewClient(cert).CreateTopic(ctx, 1, 1, nil, "secured-mtls"); err != nil {
		t.Fatalf("client certificate creating a topic: %v", err)
	}
	nocert := client(t, kgo.SeedBrokers(c.SSLBootstrap()...), kgo.DialTLSConfig(tc), kgo.RequestRetries(0))
	if _, err := kadm.NewClient(nocert).BrokerMetadata(ctx); err == nil {
		t.Fatal("the SSL listener answered a client without a certificate")
	}

	// The harness's own client still works.
	if _, err := c.Admin().ListTopics(ctx); err != nil {
		t.Fatalf("harness client on a secured cluster: %v", err)
	}
}

func client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// The OAUTHBEARER listener takes an unsigned token for the super user and
// refuses an expired one: what the provider's OAUTHBEARER tests rely on.
func TestSecureClusterOAuthBearer(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 1, Security: &kafkatest.Security{OAuthBearer: true}})
	a := c.Secure()
	if len(c.OAuthBootstrap()) != 1 {
		t.Fatalf("OAUTHBEARER listeners: %v, want one", c.OAuthBootstrap())
	}
	tc, err := a.TLSConfig(false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	login := func(token string) error {
		cl := client(t, kgo.SeedBrokers(c.OAuthBootstrap()...), kgo.DialTLSConfig(tc),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()), kgo.RetryTimeout(5*time.Second))
		_, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "oauth-"+strconv.Itoa(int(time.Now().UnixNano()%1e6)))
		return err
	}
	// Creating a topic needs more than an anonymous login: the token's
	// sub, the super user, is the principal.
	if err := login(kafkatest.UnsecuredToken(a.SuperUser.Username, time.Hour)); err != nil {
		t.Fatalf("the super user's token creating a topic over OAUTHBEARER: %v", err)
	}
	if err := login(kafkatest.UnsecuredToken(a.SuperUser.Username, -time.Minute)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("an expired token: got %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	// The listener without it stays closed to OAUTHBEARER.
	cl := client(t, kgo.SeedBrokers(c.SASLSSLBootstrap()...), kgo.DialTLSConfig(tc),
		kgo.SASL(oauth.Auth{Token: kafkatest.UnsecuredToken(a.SuperUser.Username, time.Hour)}.AsMechanism()), kgo.RetryTimeout(5*time.Second))
	if _, err := kadm.NewClient(cl).ListBrokers(ctx); !errors.Is(err, kerr.UnsupportedSaslMechanism) {
		t.Fatalf("OAUTHBEARER on the SCRAM listener: got %v, want UNSUPPORTED_SASL_MECHANISM", err)
	}
}
