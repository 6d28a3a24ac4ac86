package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// connFlags are the provider block's connection settings, as flags.
type connFlags struct {
	bootstrap      string
	requestTimeout time.Duration
	tls            bool
	caCert         string
	clientCert     string
	clientKey      string
	insecure       bool
	serverName     string
	saslMechanism  string
	saslUsername   string
	saslPassword   string
	oauth          kafka.OAuthConfig
	oauthScopes    []string
	// fs tells a flag given from its default (request-timeout's).
	fs *pflag.FlagSet
}

func (c *connFlags) register(fs *pflag.FlagSet) {
	c.fs = fs
	fs.StringVar(&c.bootstrap, "bootstrap-servers", "", "Kafka bootstrap servers, comma-separated host:port (default $"+kafka.EnvBootstrapServers+")")
	fs.DurationVar(&c.requestTimeout, "request-timeout", kafka.DefaultRequestTimeout, "how long one request to Kafka may take, dial included (default $"+kafka.EnvRequestTimeout+", else 30s)")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS, trusting the system's CAs (implied by any --tls-* flag; default $"+kafka.EnvTLS+", and every --tls-* flag falls back to its KAFKA_TLS_* variable)")
	fs.StringVar(&c.caCert, "tls-ca-cert", "", "CA certificate of the brokers: inline PEM or a file path")
	fs.StringVar(&c.clientCert, "tls-client-cert", "", "client certificate for mutual TLS: inline PEM or a file path")
	fs.StringVar(&c.clientKey, "tls-client-key", "", "private key of --tls-client-cert: inline PEM or a file path")
	fs.BoolVar(&c.insecure, "tls-insecure-skip-verify", false, "skip verification of the brokers' certificates (unsafe; for tests only)")
	fs.StringVar(&c.serverName, "tls-server-name", "", "host name to verify the brokers' certificates against")
	fs.StringVar(&c.saslMechanism, "sasl-mechanism", "", "SASL mechanism: "+strings.Join(kafka.Mechanisms, ", ")+" (default $"+kafka.EnvSASLMechanism+", else "+kafka.MechanismScramSHA512+" when SASL is used)")
	fs.StringVar(&c.saslUsername, "sasl-username", "", "SASL username (default $"+kafka.EnvSASLUsername+"; either one turns SASL on)")
	fs.StringVar(&c.saslPassword, "sasl-password", "", "SASL password (default $"+kafka.EnvSASLPassword+", which keeps it out of the process list)")
	fs.StringVar(&c.oauth.Token, "sasl-oauth-token", "", "OAUTHBEARER token (default $"+kafka.EnvSASLToken+", which keeps it out of the process list)")
	fs.StringVar(&c.oauth.TokenEndpointURL, "sasl-oauth-token-endpoint-url", "", "OAUTHBEARER: OAuth 2.0 token endpoint for the client-credentials grant (default $"+kafka.EnvSASLTokenEndpointURL+")")
	fs.StringVar(&c.oauth.ClientID, "sasl-oauth-client-id", "", "OAUTHBEARER: client id at the token endpoint (default $"+kafka.EnvSASLClientID+")")
	fs.StringVar(&c.oauth.ClientSecret, "sasl-oauth-client-secret", "", "OAUTHBEARER: client secret (default $"+kafka.EnvSASLClientSecret+", which keeps it out of the process list)")
	fs.StringSliceVar(&c.oauthScopes, "sasl-oauth-scopes", nil, "OAUTHBEARER: scopes to ask the token endpoint for, comma-separated (default $"+kafka.EnvSASLScopes+", space-separated)")
}

// saslWanted says whether a flag or the environment asks for SASL, as a
// sasl {} block in the provider does.
func (c *connFlags) saslWanted(getenv func(string) string) bool {
	o := c.oauth
	return c.saslMechanism != "" || c.saslUsername != "" || c.saslPassword != "" ||
		o.Token != "" || o.TokenEndpointURL != "" || o.ClientID != "" || o.ClientSecret != "" || len(c.oauthScopes) > 0 ||
		kafka.SASLFromEnvironment(getenv)
}

// config builds the client settings as the provider does: flags first,
// then the provider's environment variables. SASL is used when a --sasl-*
// flag is given or the environment asks for it (kafka.SASLFromEnvironment),
// as in the provider.
func (c *connFlags) config(getenv func(string) string) (kafka.Config, error) {
	kc := kafka.Config{RequestTimeout: c.requestTimeout, ClientID: "kafkascale-cli"}
	kc.BootstrapServers = kafka.SplitServers(c.bootstrap)
	if len(kc.BootstrapServers) == 0 {
		kc.BootstrapServers = kafka.SplitServers(getenv(kafka.EnvBootstrapServers))
	}
	if len(kc.BootstrapServers) == 0 {
		return kc, errors.New("no bootstrap servers: pass --bootstrap-servers or set " + kafka.EnvBootstrapServers + " (comma-separated host:port)")
	}
	if c.tls || c.caCert != "" || c.clientCert != "" || c.clientKey != "" || c.insecure || c.serverName != "" {
		kc.TLS = &kafka.TLSConfig{CACert: c.caCert, ClientCert: c.clientCert, ClientKey: c.clientKey, InsecureSkipVerify: c.insecure, ServerName: c.serverName}
	}
	var err error
	if kc.TLS, err = kafka.TLSWithEnvironment(kc.TLS, getenv); err != nil {
		return kc, err
	}
	if c.fs == nil || !c.fs.Changed("request-timeout") {
		d, err := kafka.RequestTimeoutFromEnvironment(getenv)
		if err != nil {
			return kc, err
		}
		if d > 0 {
			kc.RequestTimeout = d
		}
	}
	if c.saslWanted(getenv) {
		s := &kafka.SASLConfig{Mechanism: c.saslMechanism, Username: c.saslUsername, Password: c.saslPassword, OAuth: c.oauth}
		s.OAuth.Scopes = c.oauthScopes
		s.FillDefaults(getenv)
		if kafka.UsesPassword(s.Mechanism) && s.Username == "" {
			return kc, errors.New("SASL needs a username: pass --sasl-username or set " + kafka.EnvSASLUsername)
		}
		if s.Mechanism == kafka.MechanismOAuthBearer && s.OAuth.Token == "" && s.OAuth.TokenEndpointURL == "" {
			return kc, errors.New("OAUTHBEARER needs a token source: pass --sasl-oauth-token or --sasl-oauth-token-endpoint-url, or set " +
				kafka.EnvSASLToken + " or " + kafka.EnvSASLTokenEndpointURL)
		}
		kc.SASL = s
	}
	return kc, nil
}

// connect builds the client; it dials on first use.
func (c *connFlags) connect() (*kafka.Client, error) {
	kc, err := c.config(os.Getenv)
	if err != nil {
		return nil, err
	}
	cl, err := kafka.NewClient(kc)
	if err != nil {
		return nil, fmt.Errorf("invalid connection settings: %w", err)
	}
	return cl, nil
}

// readOperations reads every recorded operation once, with a client that
// lives for the read: what the one-shot commands need.
func (c *connFlags) readOperations(ctx context.Context) ([]*executor.Operation, error) {
	cl, err := c.connect()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return cl.FollowOperations().Poll(ctx)
}
