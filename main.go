// Command terraform-provider-kafkascale is the kafkascale Terraform provider:
// it scales Apache Kafka clusters, topics and Kafka Streams applications from
// `terraform plan` and `terraform apply`.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"runtime/debug"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/provider"
)

// version is set by `make build` and the release (ldflags -X main.version).
var version = "dev"

// defaultMemoryLimit is the soft memory limit the provider runs under unless
// GOMEMLIMIT says otherwise. A plan of a cluster with 933,000 partitions
// holds a few hundred megabytes live but allocates several gigabytes in
// passing; under a soft limit the collector runs sooner instead of letting
// the heap double. It is soft: the provider may pass it rather than fail.
const defaultMemoryLimit = 1536 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	serve()
}

func serve() {
	var debugMode bool
	flag.BoolVar(&debugMode, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/kafkascale/kafkascale",
		Debug:   debugMode,
	})
	if err != nil {
		log.Fatal(err)
	}
}
