package provider

import (
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// diag.Diagnostics is the framework's diagnostics collection, named for readability
// in helpers that build several values.
const bugReport = "This is a bug in the kafkascale provider; please report it with the provider version and the steps that led here."

// providerDataFrom is what every Configure does: take the provider's client
// set, nil before the provider is configured.
func providerDataFrom(pd any, diags *diag.Diagnostics) *providerData {
	if pd == nil {
		return nil
	}
	data, ok := pd.(*providerData)
	if !ok {
		diags.Append(unexpectedProviderData(pd))
		return nil
	}
	return data
}

func unexpectedProviderData(got any) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Unexpected provider data",
		fmt.Sprintf("While configuring a resource, the provider handed over %T instead of its client set. %s", got, bugReport))
}

func providerNotConfigured() diag.Diagnostic {
	return diag.NewErrorDiagnostic("Provider not configured",
		"While reading, the provider had no Kafka client: bootstrap_servers was not known when the provider was configured. "+
			"Make sure bootstrap_servers (or KAFKA_BOOTSTRAP_SERVERS) is set to values known at plan time.")
}

// kafkaError explains a failed Kafka call: what we attempted, what went
// wrong, and what the user can do about the common causes.
func kafkaError(attempt string, err error) diag.Diagnostic {
	var auth *kafka.AuthError
	if errors.As(err, &auth) {
		switch auth.Kind {
		case kafka.AuthNotTLS:
			return diag.NewErrorDiagnostic("Not a TLS listener",
				fmt.Sprintf("While attempting to %s, the broker closed the connection during the TLS handshake, as a plaintext "+
					"listener does: the tls block is set, but bootstrap_servers names a listener without TLS.\n\n"+
					"Point bootstrap_servers at the brokers' TLS listener (SSL or SASL_SSL), or remove the tls block if the "+
					"listener is plaintext.\n\n%v", attempt, err))
		case kafka.AuthNotSASL:
			return diag.NewErrorDiagnostic("Not a SASL listener",
				fmt.Sprintf("While attempting to %s, the broker answered the SASL handshake as a listener without SASL, so no "+
					"credential was checked: the sasl block is set, but bootstrap_servers names a listener without SASL "+
					"(PLAINTEXT or SSL).\n\nPoint bootstrap_servers at the brokers' SASL listener (SASL_PLAINTEXT or SASL_SSL), "+
					"or remove the sasl block if the listener needs none.\n\n%v", attempt, err))
		}
		if auth.Kind == kafka.AuthSASL {
			return diag.NewErrorDiagnostic("Kafka authentication failed",
				fmt.Sprintf("While attempting to %s, SASL authentication with %s failed.\n\n%s\n\n%v",
					attempt, auth.Mechanism, saslAdvice(auth.Mechanism), err))
		}
		return diag.NewErrorDiagnostic("TLS handshake failed",
			fmt.Sprintf("While attempting to %s, the TLS handshake with a broker failed.\n\n"+
				"Check that tls.ca_cert holds the CA that signed the brokers' certificates, that the certificates are valid for "+
				"the host dialled (or tls.server_name), and for mutual TLS that tls.client_cert is signed by a CA the brokers "+
				"trust.\n\n%v", attempt, err))
	}
	var stopped *kafka.StoppedError
	if errors.As(err, &stopped) {
		return diag.NewErrorDiagnostic("Stopped before Kafka answered",
			fmt.Sprintf("While attempting to %s, the apply's own deadline passed or it was interrupted; the cluster itself "+
				"may be healthy.\n\nIf the deadline was too short, raise the resource's timeouts and apply again: an operation "+
				"kafkascale started resumes where it stopped.\n\n%v", attempt, err))
	}
	var unreachable *kafka.UnreachableError
	if errors.As(err, &unreachable) {
		return diag.NewErrorDiagnostic("Kafka cluster unreachable",
			fmt.Sprintf("While attempting to %s, no bootstrap server answered.\n\n"+
				"Check that the brokers are running and that bootstrap_servers, tls and sasl match their listeners; "+
				"raise request_timeout if the network is slow.\n\n%v", attempt, err))
	}
	return diag.NewErrorDiagnostic("Kafka request failed",
		fmt.Sprintf("While attempting to %s, Kafka answered with an error.\n\n%v", attempt, err))
}

// saslAdvice is what to check when a mechanism's login fails.
func saslAdvice(mechanism string) string {
	switch mechanism {
	case kafka.MechanismOAuthBearer:
		return "Check the token source: sasl.token (or " + kafka.EnvSASLToken + ") must be a token the brokers accept, " +
			"not expired; with sasl.token_endpoint_url, check client_id, client_secret and scopes with the identity provider, " +
			"and that the brokers trust the tokens it issues (their OAUTHBEARER validator, audience and issuer)."
	case kafka.MechanismAWSMSKIAM:
		return "Check the AWS credentials the default chain finds (AWS_ACCESS_KEY_ID, AWS_PROFILE, an instance or task role), " +
			"that their IAM policy allows kafka-cluster:Connect and what the operation needs, and that the bootstrap " +
			"servers are the cluster's IAM listener (port 9098)."
	}
	return fmt.Sprintf("Check sasl.username and sasl.password (or %s and %s) and sasl.mechanism against the user's "+
		"credentials on the cluster.", EnvSASLUsername, EnvSASLPassword)
}
