package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// TestAccLeaseAndJSON takes the cluster's operation lease as the provider
// does (a Lessee on the cluster's lease log) for a recorded operation, and
// checks from another process that `kafkascale lease` names the holder
// while it holds the lease and no one once it released it, and that
// `operations --output json` is JSON a script can read.
func TestAccLeaseAndJSON(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 1})
	bin := buildCommand(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	servers := "--bootstrap-servers=" + strings.Join(c.BootstrapServers(), ",")

	// A fresh cluster: no lease log yet, so no one holds the lease.
	const free = "no one holds the cluster's operation lease, and no claim waits for it\n"
	if r := runBinary(ctx, t, bin, "lease", servers); r.code != 0 || r.stdout != free {
		t.Fatalf("lease on a fresh cluster: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	key := "cluster/" + c.ClusterID()
	now := time.Now().UTC()
	op := &executor.Operation{Key: key, ID: "op-lease-acc", Kind: executor.KindScaleOut, TargetBrokerCount: 2,
		BrokersBefore: []int32{1}, Phase: executor.PhaseAddBrokers, StartedAt: now, UpdatedAt: now}
	if err := cl.Operations().Save(ctx, op); err != nil {
		t.Fatal(err)
	}

	host, _ := os.Hostname()
	lessee := &executor.Lessee{Records: cl.LeaseLog(), Host: host, PID: os.Getpid(), Session: "acc"}
	holding, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- lessee.Hold(ctx, executor.LeaseWork{Operation: op.ID, Resource: `kafkascale_cluster "main"`, What: "scale-out 1 -> 2"},
			func(ctx context.Context, _ *executor.Held) error {
				close(holding)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
	}()
	select {
	case <-holding:
	case err := <-held:
		t.Fatalf("taking the lease: %v", err)
	case <-ctx.Done():
		t.Fatal("the lease was not taken within 3 minutes")
	}

	r := runBinary(ctx, t, bin, "lease", servers)
	t.Logf("kafkascale lease while held:\n%s", r.stdout)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^held by:\s+operation op-lease-acc \(scale-out 1 -> 2\)$`),
		regexp.MustCompile(`(?m)^resource:\s+kafkascale_cluster "main"$`),
		regexp.MustCompile(`(?m)^run by:\s+host ` + regexp.QuoteMeta(host) + fmt.Sprintf(` pid %d$`, os.Getpid())),
		regexp.MustCompile(`(?m)^since:\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$`),
		regexp.MustCompile(`(?m)^expires:\s+.* unless it heartbeats again$`),
	} {
		if r.code != 0 || !want.MatchString(r.stdout) {
			t.Fatalf("lease while held: exit %d, want %s in stdout:\n%s\nstderr %q", r.code, want, r.stdout, r.stderr)
		}
	}
	r = runBinary(ctx, t, bin, "lease", "--output", "json", servers)
	var lease leaseJSON
	if err := json.Unmarshal([]byte(r.stdout), &lease); err != nil || r.code != 0 {
		t.Fatalf("lease --output json: exit %d, %v:\n%s", r.code, err, r.stdout)
	}
	if h := lease.Holder; h == nil || h.Operation != op.ID || h.PID != os.Getpid() || !h.Holding || h.Overdue {
		t.Fatalf("lease --output json holder: %s", r.stdout)
	}

	// What a script does: the list through a JSON parser.
	list := exec.CommandContext(ctx, bin, "operations", "--output", "json", servers)
	pretty := exec.CommandContext(ctx, "python3", "-m", "json.tool")
	pipe, err := list.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pretty.Stdin = pipe
	var prettyOut, prettyErr bytes.Buffer
	pretty.Stdout, pretty.Stderr = &prettyOut, &prettyErr
	if err := list.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pretty.Run(); err != nil {
		t.Fatalf("operations --output json | python3 -m json.tool: %v: %s", err, prettyErr.String())
	}
	if err := list.Wait(); err != nil {
		t.Fatalf("operations --output json: %v", err)
	}
	var ops operationsJSON
	if err := json.Unmarshal(prettyOut.Bytes(), &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops.Operations) != 1 || ops.Operations[0].ID != op.ID || ops.Operations[0].Key != key || ops.Operations[0].Phase != "add-brokers" || ops.Operations[0].Done {
		t.Fatalf("operations --output json:\n%s", prettyOut.String())
	}
	// The key names the operation as its id does.
	r = runBinary(ctx, t, bin, "operation", "show", key, "-o", "json", servers)
	var shown operationDetailJSON
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.ID != op.ID || shown.TargetBrokerCount != 2 || shown.Plan != nil {
		t.Fatalf("operation show KEY -o json: exit %d, %v:\n%s\nstderr %q", r.code, err, r.stdout, r.stderr)
	}

	close(release)
	if err := <-held; err != nil {
		t.Fatalf("holding the lease: %v", err)
	}
	if r := runBinary(ctx, t, bin, "lease", servers); r.code != 0 || r.stdout != free {
		t.Fatalf("lease once released: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
