package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/hashicorp/go-cleanhttp"
	"github.com/twmb/franz-go/pkg/sasl"
	saslaws "github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// SASL mechanisms the provider accepts, in the spelling Kafka uses.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
	MechanismOAuthBearer = "OAUTHBEARER"
	MechanismAWSMSKIAM   = "AWS_MSK_IAM"
)

// Mechanisms lists every supported SASL mechanism; the provider schema
// validates against it and shows it in the attribute's description.
var Mechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512, MechanismOAuthBearer, MechanismAWSMSKIAM}

// UsesPassword says whether a mechanism logs in with a username and
// password (PLAIN and SCRAM), as opposed to a token or AWS credentials.
func UsesPassword(mechanism string) bool {
	switch mechanism {
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		return true
	}
	return false
}

// SASLConfig is how to log in. Username and Password serve PLAIN and
// SCRAM; OAuth serves OAUTHBEARER; AWS_MSK_IAM needs nothing here, as it
// takes its credentials from the AWS SDK's default chain (environment,
// shared files, SSO, web identity, container or instance role).
type SASLConfig struct {
	Mechanism string
	Username  string
	Password  string
	OAuth     OAuthConfig
}

// OAuthConfig is where an OAUTHBEARER token comes from: either a static
// Token, or the OAuth 2.0 client-credentials grant against
// TokenEndpointURL, whose tokens golang.org/x/oauth2 caches and renews
// before they expire.
type OAuthConfig struct {
	Token            string
	TokenEndpointURL string
	ClientID         string
	ClientSecret     string
	Scopes           []string
}

// source describes the token source in an error, without any secret.
func (o OAuthConfig) source() string {
	if o.TokenEndpointURL != "" {
		return fmt.Sprintf("a token for client %q from %s", o.ClientID, o.TokenEndpointURL)
	}
	return "a static token"
}

// credential names what a mechanism presents, for errors: never a secret.
func (s *SASLConfig) credential() string {
	switch s.Mechanism {
	case MechanismOAuthBearer:
		return s.OAuth.source()
	case MechanismAWSMSKIAM:
		return "AWS credentials from the default chain"
	}
	return fmt.Sprintf("user %q", s.Username)
}

// CredentialError is a failure to obtain what a mechanism sends, before
// any broker saw it: the token endpoint refused the client, or the AWS
// default chain found no credentials.
type CredentialError struct {
	Mechanism string
	Source    string
	Err       error
}

func (e *CredentialError) Error() string {
	return fmt.Sprintf("%s: could not obtain %s: %v", e.Mechanism, e.Source, e.Err)
}

func (e *CredentialError) Unwrap() error { return e.Err }

// mechanism builds franz-go's mechanism. timeout bounds each request to a
// token endpoint.
func (s *SASLConfig) mechanism(timeout time.Duration) (sasl.Mechanism, error) {
	if UsesPassword(s.Mechanism) && s.Username == "" {
		return nil, errors.New("sasl.username is empty")
	}
	switch s.Mechanism {
	case MechanismPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism(), nil
	case MechanismOAuthBearer:
		return s.oauthMechanism(timeout)
	case MechanismAWSMSKIAM:
		return awsMechanism()
	default:
		return nil, fmt.Errorf("sasl.mechanism %q is not one of %s", s.Mechanism, strings.Join(Mechanisms, ", "))
	}
}

func (s *SASLConfig) oauthMechanism(timeout time.Duration) (sasl.Mechanism, error) {
	o := s.OAuth
	switch {
	case o.Token != "" && o.TokenEndpointURL != "":
		return nil, errors.New("OAUTHBEARER takes either sasl.token or sasl.token_endpoint_url, not both")
	case o.Token != "":
		return oauth.Auth{Token: o.Token}.AsMechanism(), nil
	case o.TokenEndpointURL == "":
		return nil, errors.New("OAUTHBEARER needs a token source: sasl.token, or sasl.token_endpoint_url with client_id and client_secret")
	case o.ClientID == "":
		return nil, errors.New("OAUTHBEARER with sasl.token_endpoint_url needs sasl.client_id")
	}
	cc := clientcredentials.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenEndpointURL, Scopes: o.Scopes}
	hc := cleanhttp.DefaultPooledClient()
	hc.Timeout = timeout
	// The token source keeps this context for every fetch: it carries the
	// HTTP client, and no deadline, as the source outlives any one call.
	// It caches the token and asks the endpoint again shortly before the
	// token expires; concurrent connections share one fetch.
	ts := cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, hc))
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		tok, err := ts.Token()
		if err != nil {
			return oauth.Auth{}, &CredentialError{Mechanism: MechanismOAuthBearer, Source: o.source(), Err: err}
		}
		return oauth.Auth{Token: tok.AccessToken}, nil
	}), nil
}

// awsMechanism signs each login with credentials from the AWS SDK's
// default chain. Loading the chain reads the environment and shared files
// only; credentials are retrieved (and cached by the SDK until they
// expire) when a connection logs in.
func awsMechanism() (sasl.Mechanism, error) {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, fmt.Errorf("AWS_MSK_IAM: loading the AWS configuration (environment, shared config and credentials files): %w", err)
	}
	return saslaws.ManagedStreamingIAM(awsAuth(cfg.Credentials)), nil
}

func awsAuth(creds aws.CredentialsProvider) func(context.Context) (saslaws.Auth, error) {
	return func(ctx context.Context) (saslaws.Auth, error) {
		if creds == nil {
			return saslaws.Auth{}, &CredentialError{Mechanism: MechanismAWSMSKIAM, Source: "AWS credentials from the default chain", Err: errors.New("no credentials provider")}
		}
		c, err := creds.Retrieve(ctx)
		if err != nil {
			return saslaws.Auth{}, &CredentialError{Mechanism: MechanismAWSMSKIAM, Source: "AWS credentials from the default chain", Err: err}
		}
		return saslaws.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken, UserAgent: "kafkascale"}, nil
	}
}
