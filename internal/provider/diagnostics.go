package provider

import (
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// diagList is the framework's diagnostics collection, named for readability
// in helpers that build several values.
type diagList = diag.Diagnostics

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
