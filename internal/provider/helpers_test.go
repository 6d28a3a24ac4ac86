package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
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

var (
	writeOnlyOnce sync.Once
	writeOnlyOK   bool
)

// writeOnlySupported reports whether the Terraform CLI the tests run takes
// write-only attributes (1.11 and later). CI has 1.11; a machine that had
// to build Terraform 1.5.7 from source passes the token another way.
func writeOnlySupported() bool {
	writeOnlyOnce.Do(func() {
		bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
		if bin == "" {
			bin = "terraform"
		}
		out, err := exec.Command(bin, "version", "-json").Output()
		if err != nil {
			return
		}
		var v struct {
			Version string `json:"terraform_version"`
		}
		if json.Unmarshal(out, &v) != nil {
			return
		}
		var major, minor int
		if _, err := fmt.Sscanf(v.Version, "%d.%d", &major, &minor); err == nil {
			writeOnlyOK = major > 1 || (major == 1 && minor >= 11)
		}
	})
	return writeOnlyOK
}

// scalingTokenLine is the http block's token line: write-only where
// Terraform supports it.
func scalingTokenLine(token string) string {
	if writeOnlySupported() {
		return fmt.Sprintf("token_wo   = %q # write-only: never in the state", token)
	}
	return fmt.Sprintf("token      = %q", token)
}

// background returns a function that runs fn in a goroutine until the
// test ends: then stop closes, and the test waits for fn to return, so no
// watcher outlives it.
func background(t *testing.T) func(fn func(stop <-chan struct{})) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	return func(fn func(stop <-chan struct{})) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(stop)
		}()
	}
}
