package kafka

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Environment variables that supply connection settings the configuration
// leaves out. The provider and the kafkascale command read the same ones,
// so a shell set up for one works for the other.
const (
	EnvBootstrapServers = "KAFKA_BOOTSTRAP_SERVERS"
	EnvSASLMechanism    = "KAFKA_SASL_MECHANISM"
	EnvSASLUsername     = "KAFKA_SASL_USERNAME"
	EnvSASLPassword     = "KAFKA_SASL_PASSWORD" //nolint:gosec // a variable's name, not a credential
	// OAUTHBEARER's token source: a static token, or client credentials.
	EnvSASLToken            = "KAFKA_SASL_OAUTH_TOKEN"              //nolint:gosec // a variable's name, not a credential
	EnvSASLTokenEndpointURL = "KAFKA_SASL_OAUTH_TOKEN_ENDPOINT_URL" //nolint:gosec // a variable's name, not a credential
	EnvSASLClientID         = "KAFKA_SASL_OAUTH_CLIENT_ID"
	EnvSASLClientSecret     = "KAFKA_SASL_OAUTH_CLIENT_SECRET" //nolint:gosec // a variable's name, not a credential
	// EnvSASLScopes is space-separated, as OAuth 2.0 writes scopes.
	EnvSASLScopes = "KAFKA_SASL_OAUTH_SCOPES"

	// EnvRequestTimeout is a duration, as "30s" or "2m".
	EnvRequestTimeout = "KAFKA_REQUEST_TIMEOUT"
	// EnvTLS = "true" turns TLS on with the system's CAs; any other TLS
	// variable turns it on too. The certificates and the key are inline
	// PEM or file paths, as in the configuration.
	EnvTLS                   = "KAFKA_TLS"
	EnvTLSCACert             = "KAFKA_TLS_CA_CERT"
	EnvTLSClientCert         = "KAFKA_TLS_CLIENT_CERT"
	EnvTLSClientKey          = "KAFKA_TLS_CLIENT_KEY" //nolint:gosec // a variable's name, not a credential
	EnvTLSServerName         = "KAFKA_TLS_SERVER_NAME"
	EnvTLSInsecureSkipVerify = "KAFKA_TLS_INSECURE_SKIP_VERIFY"
)

// EnvError is an environment variable whose value cannot be used.
type EnvError struct {
	Variable, Value, Want string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("environment variable %s is %q: want %s", e.Variable, e.Value, e.Want)
}

// RequestTimeoutFromEnvironment is EnvRequestTimeout's duration, zero when
// it is not set. The bounds are the configuration's: 1s to 1h.
func RequestTimeoutFromEnvironment(getenv func(string) string) (time.Duration, error) {
	v := strings.TrimSpace(getenv(EnvRequestTimeout))
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second || d > time.Hour {
		return 0, &EnvError{Variable: EnvRequestTimeout, Value: v, Want: "a duration between 1s and 1h, such as 30s"}
	}
	return d, nil
}

// TLSWithEnvironment completes t, the TLS settings of the configuration
// (nil: it set none), from the environment: each setting left empty takes
// its variable. With t nil, TLS is used when EnvTLS is true, or when it is
// not set and any other TLS variable is; the result is nil when nothing
// asks for TLS.
func TLSWithEnvironment(t *TLSConfig, getenv func(string) string) (*TLSConfig, error) {
	on, insecure := false, false
	for _, b := range []struct {
		name string
		into *bool
	}{{EnvTLS, &on}, {EnvTLSInsecureSkipVerify, &insecure}} {
		if v := strings.TrimSpace(getenv(b.name)); v != "" {
			x, err := strconv.ParseBool(v)
			if err != nil {
				return nil, &EnvError{Variable: b.name, Value: v, Want: "true or false"}
			}
			*b.into = x
		}
	}
	env := TLSConfig{CACert: getenv(EnvTLSCACert), ClientCert: getenv(EnvTLSClientCert), ClientKey: getenv(EnvTLSClientKey),
		ServerName: getenv(EnvTLSServerName), InsecureSkipVerify: insecure}
	if t == nil {
		// KAFKA_TLS=false keeps TLS off whatever else is set.
		if off := getenv(EnvTLS) != "" && !on; off || (!on && env == (TLSConfig{})) {
			return nil, nil
		}
		t = &TLSConfig{}
	}
	out := *t
	for _, f := range []struct {
		dst *string
		src string
	}{
		{&out.CACert, env.CACert}, {&out.ClientCert, env.ClientCert}, {&out.ClientKey, env.ClientKey}, {&out.ServerName, env.ServerName},
	} {
		if *f.dst == "" {
			*f.dst = f.src
		}
	}
	out.InsecureSkipVerify = out.InsecureSkipVerify || env.InsecureSkipVerify
	return &out, nil
}

// SplitServers reads a comma-separated list of host:port, as
// EnvBootstrapServers holds it; blanks are dropped.
func SplitServers(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// SASLFromEnvironment reports whether the environment asks for SASL where
// the configuration says nothing of it (no sasl {} block, no --sasl-*
// flag): a mechanism, a username or an OAUTHBEARER token source is set.
// The provider and the kafkascale command both follow it, so credentials
// kept only in the environment (HCP Terraform's workspace variables, a CI
// secret) are never ignored for a connection without SASL.
func SASLFromEnvironment(getenv func(string) string) bool {
	for _, v := range []string{EnvSASLMechanism, EnvSASLUsername, EnvSASLToken, EnvSASLTokenEndpointURL} {
		if getenv(v) != "" {
			return true
		}
	}
	return false
}

// FillDefaults completes SASL settings the configuration left out, from
// the environment as getenv reads it. The mechanism falls back to
// EnvSASLMechanism, then SCRAM-SHA-512. PLAIN and SCRAM take the username
// and password from EnvSASLUsername and EnvSASLPassword. OAUTHBEARER with
// no token source configured takes EnvSASLToken, else the client
// credentials of EnvSASLTokenEndpointURL; a configured token endpoint
// takes a missing client id, secret or scopes from the environment, so
// that the secret can stay out of the configuration. The caller reports
// what is still missing, in its own terms (an attribute, a flag).
func (s *SASLConfig) FillDefaults(getenv func(string) string) {
	if s.Mechanism == "" {
		s.Mechanism = getenv(EnvSASLMechanism)
	}
	if s.Mechanism == "" {
		s.Mechanism = MechanismScramSHA512
	}
	switch {
	case UsesPassword(s.Mechanism):
		if s.Username == "" {
			s.Username = getenv(EnvSASLUsername)
		}
		if s.Password == "" {
			s.Password = getenv(EnvSASLPassword)
		}
	case s.Mechanism == MechanismOAuthBearer:
		o := &s.OAuth
		if o.Token == "" && o.TokenEndpointURL == "" {
			o.Token = getenv(EnvSASLToken)
			if o.Token == "" {
				o.TokenEndpointURL = getenv(EnvSASLTokenEndpointURL)
			}
		}
		if o.TokenEndpointURL != "" {
			if o.ClientID == "" {
				o.ClientID = getenv(EnvSASLClientID)
			}
			if o.ClientSecret == "" {
				o.ClientSecret = getenv(EnvSASLClientSecret)
			}
			if len(o.Scopes) == 0 {
				o.Scopes = strings.Fields(getenv(EnvSASLScopes))
			}
		}
	}
}
