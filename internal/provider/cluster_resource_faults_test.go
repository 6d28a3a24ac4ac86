package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// slowConfig throttles hard, so a reassignment of the test's data runs long
// enough to be interrupted.
func slowConfig(servers []string, apiURL string, brokers int, updateTimeout string) string {
	return testAccProviderConfig(servers, "") + fmt.Sprintf(`
resource "kafkascale_cluster" "test" {
  broker_count = %d
  scaling {
    http {
      endpoint   = %q
      cluster_id = "local"
      token      = "s3cret-token"
    }
  }
  rebalance {
    initial_throttle = 1048576
    min_throttle     = 1048576
  }
  timeouts {
    update = %q
  }
}
`, brokers, apiURL, updateTimeout)
}

func loadOperation(t *testing.T, c *kafkatest.Cluster) *executor.Operation {
	t.Helper()
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	op, err := cl.Operations().Load(context.Background(), "cluster/"+c.ClusterID())
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// An apply cut off mid-reassignment (its context ends at timeouts.update)
// leaves the plan and its progress in the operations topic; the next apply
// resumes that same operation and completes it.
func TestAccClusterResource_interruptedApplyResumes(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 3)
	createTopicRF(t, c, "load", 24, 3)
	fillTopic(t, c, "load", 96<<20)
	ledger := startLedger(t, c, "ledger")

	var interrupted *executor.Operation
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: slowConfig(c.BootstrapServers(), apiURL, 3, "30m")},
			{
				Config:      slowConfig(c.BootstrapServers(), apiURL, 5, "45s"),
				ExpectError: wrapped(`(?s)Scaling interrupted.*the next apply resumes it`),
			},
			{
				PreConfig: func() {
					interrupted = loadOperation(t, c)
					if interrupted == nil || interrupted.Phase != executor.PhaseReassign {
						t.Fatalf("after the interrupted apply the stored operation is %+v; want one in phase reassign", interrupted)
					}
					t.Logf("interrupted operation %s at group %d/%d, %d moves done: %s",
						interrupted.ID, interrupted.Group+1, len(interrupted.Plan.Groups), interrupted.MovesDone, interrupted.LastError)
				},
				// The refresh keeps the last applied count while the
				// operation is unfinished, so the change is planned again.
				Config: slowConfig(c.BootstrapServers(), apiURL, 5, "30m"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(5)),
				},
				Check: func(*terraform.State) error {
					op := loadOperation(t, c)
					if op.ID != interrupted.ID {
						t.Errorf("completed operation %s, want the interrupted %s resumed", op.ID, interrupted.ID)
					}
					if op.Phase != executor.PhaseCompleted {
						t.Errorf("operation phase %s, want completed", op.Phase)
					}
					if fmt.Sprint(op.Plan.Target) != fmt.Sprint(interrupted.Plan.Target) {
						t.Errorf("the resumed operation's plan changed: it must finish the plan it persisted")
					}
					assertNoThrottles(t, c)
					return nil
				},
			},
			{Config: slowConfig(c.BootstrapServers(), apiURL, 5, "30m"), PlanOnly: true},
		},
	})
	ledger.stop()
	// Nothing dies: the apply is cut off by its own timeout, so verify
	// allows no failed produce.
	ledger.verify(context.Background())
}

// A broker killed mid-reassignment stops the apply with an error that names
// it; once the broker is back, the next apply completes.
func TestAccClusterResource_brokerKilledMidReassignment(t *testing.T) {
	testAccParallel(t)
	c, apiURL := startScalableCluster(t, 3)
	createTopicRF(t, c, "load", 24, 3)
	fillTopic(t, c, "load", 64<<20)
	ledger := startLedger(t, c, "ledger")
	ledger.allowFailures(0, "broker 4 dies while replicas are copied onto it; the ledger's partitions keep "+
		"at least 2 of 3 replicas in sync and get a new leader within seconds, so no produce waits 2 minutes")

	var killed atomic.Int32
	watch := background(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: slowConfig(c.BootstrapServers(), apiURL, 3, "30m")},
			{
				PreConfig: func() {
					watch(func(stop <-chan struct{}) { killWhenReassigning(t, c, 4, &killed, stop) })
				},
				Config:      slowConfig(c.BootstrapServers(), apiURL, 5, "30m"),
				ExpectError: wrapped(`(?s)A broker went offline during the reassignment.*broker 4 went offline.*run apply again`),
			},
			{
				PreConfig: func() {
					if killed.Load() != 4 {
						t.Fatalf("broker 4 was never killed: no reassignment was seen")
					}
					if err := c.RestartBroker(context.Background(), 4); err != nil {
						t.Fatalf("restarting broker 4: %v", err)
					}
				},
				Config: slowConfig(c.BootstrapServers(), apiURL, 5, "30m"),
				Check: func(*terraform.State) error {
					if op := loadOperation(t, c); op.Phase != executor.PhaseCompleted {
						t.Errorf("operation phase %s after the re-apply, want completed", op.Phase)
					}
					assertNoThrottles(t, c)
					return nil
				},
			},
		},
	})
	ledger.stop()
	ledger.verify(context.Background())
	assertTopicReadable(t, c, "load", 64<<20)
}

// killWhenReassigning SIGKILLs broker id as soon as a replica is being
// copied onto it: listed as adding by the controller, or in its partition's
// replicas but not yet in sync.
func killWhenReassigning(t *testing.T, c *kafkatest.Cluster, id int32, killed *atomic.Int32, stop <-chan struct{}) {
	copying := func() bool {
		rs, _ := listReassignments(c) // from a goroutine: no t.Fatal here
		for _, r := range rs {
			if slices.Contains(r.Adding, id) {
				return true
			}
		}
		md, err := c.Admin().Metadata(context.Background())
		if err != nil {
			return false
		}
		for _, td := range md.Topics {
			for _, p := range td.Partitions {
				if slices.Contains(p.Replicas, id) && !slices.Contains(p.ISR, id) {
					return true
				}
			}
		}
		return false
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if copying() {
			if err := c.KillBroker(id); err != nil {
				t.Errorf("killing broker %d: %v", id, err)
			}
			t.Logf("killed broker %d while a replica was being copied onto it", id)
			killed.Store(id)
			return
		}
	}
}

// faultyAPI sits in front of the real scaling API and injects the answers a
// real platform gives under load, which the real server cannot be made to
// produce on demand.
type faultyAPI struct {
	next http.Handler
	mu   sync.Mutex
	// fault returns the status to answer instead of forwarding, or 0.
	fault func(r *http.Request, n int) int
	seen  []string
}

func (f *faultyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.URL.Path)
	n := len(f.seen)
	status := 0
	if f.fault != nil {
		status = f.fault(r, n)
	}
	f.mu.Unlock()
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error": "injected %d"}`, status)
		return
	}
	f.next.ServeHTTP(w, r)
}

func (f *faultyAPI) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// 429 and 503 are retried with backoff and the apply succeeds; 400 and 401
// fail at once with a clear error and leave the state truthful.
func TestAccClusterResource_scalingAPIFaults(t *testing.T) {
	testAccParallel(t)
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
	api := kafkatest.NewScalingAPI(c, "local", "s3cret-token")
	faults := &faultyAPI{next: api}
	srv := httptest.NewServer(faults)
	t.Cleanup(func() { srv.Close(); api.Close() })
	createTopicRF(t, c, "load", 12, 3)

	withToken := func(token string, brokers int, extra ...string) string {
		return strings.Replace(clusterConfig(c.BootstrapServers(), srv.URL, brokers, "", extra...), `"s3cret-token"`, fmt.Sprintf("%q", token), 1)
	}
	puts := func() int {
		n := 0
		for _, r := range faults.requests() {
			if strings.HasPrefix(r, "PUT ") {
				n++
			}
		}
		return n
	}

	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: withToken("s3cret-token", 3)},
			{
				// A wrong token: 401, no retry, a message that names the fix.
				Config:      withToken("wrong-token", 4),
				ExpectError: wrapped(`(?s)answered 401 Unauthorized.*check the token`),
			},
			{
				PreConfig: func() {
					assertUntouched(t, c, 3)
					faults.mu.Lock()
					faults.fault = func(r *http.Request, _ int) int {
						if r.Method == http.MethodPut {
							return http.StatusBadRequest
						}
						return 0
					}
					faults.mu.Unlock()
				},
				Config:      withToken("s3cret-token", 4),
				ExpectError: wrapped(`(?s)answered 400 Bad Request.*injected 400`),
			},
			{
				// State stayed truthful: still 3 brokers, so the change is
				// planned again.
				PreConfig: func() {
					assertUntouched(t, c, 3)
					faults.mu.Lock()
					injected := 0
					faults.fault = func(r *http.Request, _ int) int {
						if r.Method == http.MethodPut && injected < 2 {
							injected++
							return []int{http.StatusServiceUnavailable, http.StatusTooManyRequests}[injected-1]
						}
						return 0
					}
					faults.seen = nil
					faults.mu.Unlock()
				},
				Config: withToken("s3cret-token", 4),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(4)),
				},
				Check: func(*terraform.State) error {
					if n := puts(); n != 3 {
						t.Errorf("the scaling API saw %d PUTs; want 3 (a 503 and a 429 retried, then accepted): %v", n, faults.requests())
					}
					return nil
				},
			},
			{
				// Cut by its timeout while the platform holds the start of
				// broker 5...
				PreConfig: func() {
					api.HoldScaleOuts(hold)
					faults.mu.Lock()
					faults.fault, faults.seen = nil, nil
					faults.mu.Unlock()
				},
				Config:      withToken("s3cret-token", 5, "timeouts {\n    update = \"2s\"\n  }"),
				ExpectError: wrapped(`(?s)Scaling interrupted.*may still be running on the platform`),
			},
			{
				// ...then reverted (soak seed 22): the revert waits for the
				// platform's request and removes the broker it added. Before,
				// it ended at 4 and broker 5 registered afterwards.
				// The broker starts once the apply polls the platform's
				// operation: after the plan, which saw 4 brokers.
				PreConfig: func() {
					if n := puts(); n != 1 {
						t.Fatalf("the cut scale-out sent %d PUTs, want 1: %v", n, faults.requests())
					}
					faults.mu.Lock()
					faults.fault = func(r *http.Request, _ int) int {
						if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/operations/") {
							release()
						}
						return 0
					}
					faults.mu.Unlock()
				},
				Config: withToken("s3cret-token", 4),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(4)),
				},
				Check: func(*terraform.State) error {
					release()
					return platformSettledAt(srv.URL, c, []int32{1, 2, 3, 4})
				},
			},
		},
	})
}

// platformSettledAt waits until the scaling API at url runs no operation,
// then says whether the cluster registers exactly want.
func platformSettledAt(url string, c *kafkatest.Cluster, want []int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := platform.NewHTTPClient(platform.HTTPConfig{Endpoint: url, ClusterID: "local", Token: "s3cret-token"})
	if err != nil {
		return err
	}
	if err := (&platform.HTTPScaler{Client: cl, PollInterval: 200 * time.Millisecond}).AwaitIdle(ctx); err != nil {
		return err
	}
	regs, err := kafkatest.DescribeCluster(ctx, c.Client())
	if err != nil {
		return err
	}
	var got []int32
	for _, r := range regs {
		got = append(got, r.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("once the platform is idle, brokers %v are registered; want %v", got, want)
	}
	return nil
}
