package kafkatest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// TestClusterQuorum runs a cluster with three controllers: it forms, creates
// a topic, elects a new leader when the active controller is SIGKILLed,
// still creates a topic on the new leader, and Stop leaves no JVM.
func TestClusterQuorum(t *testing.T) {
	began := time.Now()
	c := kafkatest.StartT(t, kafkatest.Options{Controllers: 3, Brokers: 3})
	t.Logf("3 controllers + 3 brokers formed and unfenced in %v", time.Since(began).Round(time.Millisecond))
	ctx := t.Context()
	dir := c.Dir()

	if got, want := c.ControllerIDs(), []int32{3000, 3001, 3002}; !slices.Equal(got, want) {
		t.Fatalf("ControllerIDs() = %v, want %v", got, want)
	}
	if addrs := c.ControllerAddrs(); len(addrs) != 3 || addrs[0] != c.ControllerAddr() {
		t.Errorf("ControllerAddrs() = %v, ControllerAddr() = %s; want three, the first ControllerAddr", addrs, c.ControllerAddr())
	}
	// Every node knows the three voters; a broker too.
	props, err := os.ReadFile(filepath.Join(dir, "broker-1", "node.properties"))
	if err != nil {
		t.Fatal(err)
	}
	want := "controller.quorum.voters=3000@" + c.ControllerAddrs()[0] + ",3001@" + c.ControllerAddrs()[1] + ",3002@" + c.ControllerAddrs()[2]
	if !strings.Contains(string(props), want+"\n") {
		t.Errorf("broker-1 node.properties lacks %q:\n%s", want, props)
	}
	if n := jvmsOf(t, dir); n != 6 {
		t.Errorf("%d JVMs run in %s, want 6 (3 controllers, 3 brokers)", n, dir)
	}

	createTopic := func(name string) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		// Right after an election a broker may still forward to the dead
		// leader; retry until the new one takes it.
		for {
			resp, err := c.Admin().CreateTopic(cctx, 3, 3, nil, name)
			if err == nil && resp.Err == nil {
				return
			}
			if err == nil {
				err = resp.Err
			}
			select {
			case <-cctx.Done():
				t.Fatalf("creating topic %s: %v", name, err)
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	createTopic("before-failover")

	old, err := c.ActiveController(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.ControllerIDs(), old) {
		t.Fatalf("active controller %d is none of %v", old, c.ControllerIDs())
	}
	killed, err := c.KillActiveController(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if killed != old {
		t.Errorf("KillActiveController killed %d, the leader was %d", killed, old)
	}
	if n := jvmsOf(t, dir); n != 5 {
		t.Errorf("%d JVMs run after the kill, want 5", n)
	}
	killedAt := time.Now()
	leader, err := c.WaitNewActiveController(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if leader == old || !slices.Contains(c.ControllerIDs(), leader) {
		t.Fatalf("new leader %d: want one of %v other than %d", leader, c.ControllerIDs(), old)
	}
	t.Logf("controller %d killed; %d leads after %v", old, leader, time.Since(killedAt).Round(time.Millisecond))
	createTopic("after-failover")
	// The controller has the topic once CreateTopics returns; the broker
	// that answers Metadata learns it a moment later.
	var last string
	deadline := time.Now().Add(time.Minute)
	for {
		topics, err := c.Admin().ListTopics(ctx, "before-failover", "after-failover")
		last = ""
		for _, name := range []string{"before-failover", "after-failover"} {
			if td, ok := topics[name]; err != nil || !ok || td.Err != nil || len(td.Partitions) != 3 {
				last += fmt.Sprintf("topic %s: %+v (err %v); ", name, td, err)
			}
		}
		if last == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the failover the topics are not both served with 3 partitions: %s", last)
		}
		time.Sleep(250 * time.Millisecond)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := jvmsOf(t, dir); n != 0 {
		t.Errorf("%d JVMs of %s survive Stop", n, dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s survives Stop: %v", dir, err)
	}
}

// TestClusterRefusesTwoControllers: two voters tolerate no more failures
// than one, so the harness offers one or three.
func TestClusterRefusesTwoControllers(t *testing.T) {
	if _, err := kafkatest.Start(t.Context(), kafkatest.Options{Controllers: 2}); err == nil || !strings.Contains(err.Error(), "Controllers must be 1 or 3") {
		t.Errorf("Start with 2 controllers: err = %v, want a refusal", err)
	}
}
