package provider_test

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// wrapped compiles a pattern for a diagnostic Terraform may have wrapped
// across lines: every space in the pattern matches any run of white space.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

// closedPort returns a 127.0.0.1 address nothing listens on: it binds a free
// port and releases it.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// createTopic creates a topic with the given replica assignment through the
// provider's own adapter, on a client of its own.
func createTopic(t *testing.T, c *kafkatest.Cluster, topic string, assignment map[int32][]int32) {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.CreateTopic(context.Background(), topic, assignment, nil); err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}
