// Command terraform-provider-kafkascale is the kafkascale Terraform provider:
// it scales Apache Kafka clusters, topics and Kafka Streams applications from
// `terraform plan` and `terraform apply`.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/provider"
)

// version is set by the release build (goreleaser ldflags).
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/kafkascale/kafkascale",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
