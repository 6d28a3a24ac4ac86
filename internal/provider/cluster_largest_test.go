package provider_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/provider"
)

// The largest real cluster this machine holds (issue 15, item 2): 5,000
// partitions at RF 3 on 4 brokers, scaled to 5. EnvLargestPartitions tries
// another size (a multiple of 500), as `make bench-largest PARTITIONS=...`
// does.
const (
	largestPartitions         = 5000
	largestPartitionsPerTopic = 500
	largestTopicsPerRequest   = 2
	envLargestPartitions      = "KAFKASCALE_LARGEST_PARTITIONS"
	envLargestLogDir          = "KAFKASCALE_LARGEST_LOG_DIR"
)

// largestTopics is how many topics of largestPartitionsPerTopic the test
// creates.
func largestTopics(t *testing.T) int {
	t.Helper()
	n := largestPartitions
	if v := os.Getenv(envLargestPartitions); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 || n%largestPartitionsPerTopic != 0 {
			t.Fatalf("%s=%q: want a positive multiple of %d", envLargestPartitions, v, largestPartitionsPerTopic)
		}
	}
	return n / largestPartitionsPerTopic
}

// largestRebalance lets the groups be large: the partitions are empty, so
// the copy is nothing and the time is the executor's and the controller's.
const largestRebalance = `initial_throttle     = 104857600
    max_moves_per_step   = 500
    max_moves_per_broker = 1000`

// TestAccClusterResource_largestLocalCluster scales the largest cluster the
// local machine carries, 5,000 partitions (10 topics of 500, RF 3, empty)
// over 4 brokers in one rack, to 5 brokers, and checks the outcome on the
// cluster itself: the plan moves exactly the lower bound, replicas end
// within one of each other on all five brokers, no throttle is left,
// nothing is reassigning and the next plan is empty.
//
// It logs the figures the issue asks for, which `make bench-largest`
// prints: the plan's wall time, the time from the apply to the first
// submitted step, with the broker start by the platform taken apart from
// the provider's own work, and the apply's total time against the plan's
// estimated_duration. They are figures, not assertions: the machine is
// shared.
func TestAccClusterResource_largestLocalCluster(t *testing.T) {
	testAccPreCheck(t)
	logPath := filepath.Join(t.TempDir(), "terraform.log")
	t.Setenv("TF_LOG", "INFO")
	t.Setenv("TF_LOG_PATH", logPath)

	began := time.Now()
	c, apiURL := withScalingAPI(t, kafkatest.StartT(t, kafkatest.Options{
		// One rack: the plan predicts a new broker's rack from the racks
		// that exist, so with one rack the plan is the apply's, and the
		// racks force nothing on the balance.
		Brokers: 4, Racks: []string{"a"}, HeapMB: 512,
		// Set to keep the brokers' and the controller's server.log.
		LogDir: os.Getenv(envLargestLogDir),
	}))
	topics := largestTopics(t)
	created := createLargestTopics(t, c, topics)
	t.Logf("cluster of 4 brokers with %d partitions ready %s after the start (topics created and in sync in %s)",
		topics*largestPartitionsPerTopic, time.Since(began).Round(100*time.Millisecond), created.Round(100*time.Millisecond))

	tl := &timeline{marks: map[string]time.Time{}}
	watch := background(t)
	var replicasAtPlan int
	var estimated time.Duration
	var plannedMoves int64
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: tl.factories(),
		Steps: []resource.TestStep{
			{
				// Adopting the cluster at its count moves nothing.
				Config: clusterConfig(c.BootstrapServers(), apiURL, 4, largestRebalance),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Exact(0)),
				},
				Check: func(*terraform.State) error {
					replicasAtPlan = countReplicas(t, c) // the operations topic included
					return nil
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					planCheckFunc(func(plancheck.CheckPlanRequest) error { tl.mark("adopted"); return nil }),
				}},
			},
			{
				Config: clusterConfig(c.BootstrapServers(), apiURL, 5, largestRebalance),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("kafkascale_cluster.test", plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("planned_moves"), knownvalue.Int64Func(func(v int64) error {
						plannedMoves = v
						// The new broker must end with its share of the
						// replicas, rounded down, and each one it gets is
						// one move: nothing moves between old brokers.
						if bound := int64(replicasAtPlan / 5); v != bound {
							return fmt.Errorf("planned_moves %d, want the lower bound %d (%d replicas over 5 brokers)", v, bound, replicasAtPlan)
						}
						return nil
					})),
					plancheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("estimated_duration"), knownvalue.StringFunc(func(v string) error {
						d, err := time.ParseDuration(v)
						estimated = d
						return err
					})),
					planCheckFunc(func(plancheck.CheckPlanRequest) error {
						tl.mark("planned")
						return tl.watchApply(c, watch)
					}),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("broker_count"), knownvalue.Int64Exact(5)),
					statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(5)),
				},
				Check: func(*terraform.State) error {
					assertLargestScaledOut(t, c)
					assertNoThrottles(t, c)
					if rs := reassigning(t, c); len(rs) > 0 {
						t.Errorf("%d partitions are still being reassigned after the apply, e.g. %s p%d", len(rs), rs[0].Topic, rs[0].Partition)
					}
					assertOperationCompleted(t, c, 5)
					return nil
				},
			},
			{
				// Nothing left to do: the plan is empty.
				Config:   clusterConfig(c.BootstrapServers(), apiURL, 5, largestRebalance),
				PlanOnly: true,
			},
		},
	})
	if t.Failed() {
		return
	}
	tl.report(t, logPath, topics*largestPartitionsPerTopic, plannedMoves, estimated)
	t.Logf("the whole test took %s", time.Since(began).Round(100*time.Millisecond))
}

// createLargestTopics creates the test's topics with a plain admin client,
// a few per CreateTopics request, the controller placing the replicas, and
// waits until every broker shows every partition with a leader and a full
// ISR: the apply's pre-check refuses under-replicated partitions.
func createLargestTopics(t *testing.T, c *kafkatest.Cluster, topics int) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), max(4*time.Minute, time.Duration(topics)*30*time.Second))
	defer cancel()
	var names []string
	for i := range topics {
		names = append(names, fmt.Sprintf("wide-%02d", i))
	}
	for batch := range slices.Chunk(names, largestTopicsPerRequest) {
		resps, err := c.Admin().CreateTopics(ctx, largestPartitionsPerTopic, 3, nil, batch...)
		if err != nil {
			t.Fatalf("creating topics %v: %v", batch, err)
		}
		for _, r := range resps.Sorted() {
			if r.Err != nil {
				t.Fatalf("creating topic %s: %v", r.Topic, r.Err)
			}
		}
	}
	t.Logf("%d topics of %d partitions created in %s", topics, largestPartitionsPerTopic, time.Since(start).Round(100*time.Millisecond))
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, name := range names {
		if err := cl.AwaitTopicReady(ctx, name, largestPartitionsPerTopic, 3); err != nil {
			t.Fatalf("%d seconds after the creation: %v", int(time.Since(start).Seconds()), err)
		}
	}
	return time.Since(start)
}

func countReplicas(t *testing.T, c *kafkatest.Cluster) int {
	t.Helper()
	n := 0
	for _, k := range readAssignment(t, c).perBroker {
		n += k
	}
	return n
}

// assertLargestScaledOut checks the cluster after 4 -> 5 brokers: replicas
// within one of each other on all five (one rack, so the racks force
// nothing), and the new broker holding exactly the lower bound, each of its
// replicas one move of the operation.
func assertLargestScaledOut(t *testing.T, c *kafkatest.Cluster) {
	t.Helper()
	a := readAssignment(t, c)
	total, lo, hi := 0, int(^uint(0)>>1), 0
	for b := int32(1); b <= 5; b++ {
		n := a.perBroker[b]
		total += n
		lo, hi = min(lo, n), max(hi, n)
	}
	if len(a.perBroker) != 5 {
		t.Errorf("replicas are on brokers %v; want exactly brokers 1-5", a.perBroker)
	}
	if hi-lo > 1 {
		t.Errorf("replicas per broker %v spread from %d to %d; want within one", a.perBroker, lo, hi)
	}
	if got, bound := a.perBroker[5], total/5; got != bound {
		t.Errorf("the new broker 5 holds %d replicas; the lower bound for %d replicas over 5 brokers is %d", got, total, bound)
	}
	op := loadOperation(t, c)
	if op != nil && op.Plan != nil && op.Plan.ReplicaMoves != total/5 {
		t.Errorf("the operation moved %d replicas; the lower bound is %d (%d replicas over 5 brokers)", op.Plan.ReplicaMoves, total/5, total)
	}
	t.Logf("replicas per broker %v (%d in all), preferred leaders %v", a.perBroker, total, a.leaders)
}

// timeline keeps the moments the figures are taken from: when each
// terraform command started (terraform-plugin-testing builds a provider
// server for each, just before it runs the CLI), the provider's calls to
// kafkascale_cluster, marks set by the test's checks, and what two
// watchers saw on the cluster during the apply.
type timeline struct {
	mu       sync.Mutex
	commands []time.Time
	calls    []call
	marks    map[string]time.Time
	// registered is when a fifth broker was first seen registered and
	// unfenced; reassigning when the controller first listed a
	// reassignment, that is, the first step had been submitted.
	registered, reassigning time.Time
	reassigned              int
}

type call struct {
	rpc        string
	start, end time.Time
}

func (tl *timeline) factories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"kafkascale": func() (tfprotov6.ProviderServer, error) {
			tl.mu.Lock()
			tl.commands = append(tl.commands, time.Now())
			tl.mu.Unlock()
			s, err := providerserver.NewProtocol6WithError(provider.New("test")())()
			if err != nil {
				return nil, err
			}
			return timedServer{ProviderServer: s, tl: tl}, nil
		},
	}
}

func (tl *timeline) mark(name string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.marks[name] = time.Now()
}

func (tl *timeline) took(rpc, typeName string, start time.Time) {
	if typeName != "kafkascale_cluster" {
		return
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.calls = append(tl.calls, call{rpc: rpc, start: start, end: time.Now()})
}

// commandsAfter are the starts of the terraform commands run after t.
func (tl *timeline) commandsAfter(t time.Time) []time.Time {
	var out []time.Time
	for _, c := range tl.commands {
		if c.After(t) {
			out = append(out, c)
		}
	}
	return out
}

// firstCall is the first call of rpc that started within [from, to).
func (tl *timeline) firstCall(rpc string, from, to time.Time) (call, bool) {
	for _, c := range tl.calls {
		if c.rpc == rpc && !c.start.Before(from) && (to.IsZero() || c.start.Before(to)) {
			return c, true
		}
	}
	return call{}, false
}

// watchApply starts two watchers for the apply about to run: one for the
// new broker's registration, one for the first reassignment the controller
// lists. Both ask the cluster directly, every 50 ms, and end at their
// first sighting or when the test ends.
func (tl *timeline) watchApply(c *kafkatest.Cluster, watch func(func(stop <-chan struct{}))) error {
	cl, err := kafka.NewClient(kafka.Config{BootstrapServers: c.BootstrapServers()})
	if err != nil {
		return err
	}
	const every = 50 * time.Millisecond
	watch(func(stop <-chan struct{}) {
		for {
			regs, err := kafkatest.DescribeCluster(context.Background(), c.Client())
			if err == nil && slices.ContainsFunc(regs, func(r kafkatest.RegisteredBroker) bool { return r.ID == 5 && !r.Fenced }) {
				tl.mu.Lock()
				tl.registered = time.Now()
				tl.mu.Unlock()
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
		}
	})
	watch(func(stop <-chan struct{}) {
		defer cl.Close()
		for {
			rs, err := cl.ListReassignments(context.Background())
			if err == nil && len(rs) > 0 {
				tl.mu.Lock()
				tl.reassigning, tl.reassigned = time.Now(), len(rs)
				tl.mu.Unlock()
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
		}
	})
	return nil
}

// report logs the figures. Every line starts with "bench-largest:", which
// `make bench-largest` picks out.
func (tl *timeline) report(t *testing.T, logPath string, partitions int, plannedMoves int64, estimated time.Duration) {
	t.Helper()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := func(format string, args ...any) { t.Logf("bench-largest: "+format, args...) }
	secs := func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

	// Step 2 runs `terraform plan`, then `terraform show` to read the
	// saved plan, then the pre-apply checks, then `terraform apply`.
	planCmds := tl.commandsAfter(tl.marks["adopted"])
	applyCmds := tl.commandsAfter(tl.marks["planned"])
	if len(planCmds) < 2 || len(applyCmds) < 1 {
		t.Errorf("the timeline misses commands: %d after adoption, %d after the plan", len(planCmds), len(applyCmds))
		return
	}
	planStart, planEnd, applyStart := planCmds[0], planCmds[1], applyCmds[0]
	read, _ := tl.firstCall("ReadResource", planStart, planEnd)
	plan, _ := tl.firstCall("PlanResourceChange", planStart, planEnd)
	apply, ok := tl.firstCall("ApplyResourceChange", applyStart, time.Time{})
	if !ok {
		t.Errorf("no ApplyResourceChange of kafkascale_cluster after %s", applyStart.Format(time.TimeOnly))
		return
	}
	out("cluster: 4 -> 5 brokers, %d partitions, %d planned moves", partitions, plannedMoves)
	if adopt, ok := tl.firstCall("ApplyResourceChange", time.Time{}, planStart); ok {
		out("adopting the cluster (creates %s and %s): %s", kafka.OperationsTopic, kafka.LeaseTopic, secs(adopt.end.Sub(adopt.start)))
	}
	out("terraform plan: %s wall (refresh of kafkascale_cluster %s, plan %s)",
		secs(planEnd.Sub(planStart)), secs(read.end.Sub(read.start)), secs(plan.end.Sub(plan.start)))
	if tl.reassigning.IsZero() {
		t.Errorf("the watcher never saw a reassignment listed during the apply")
	} else {
		out("apply -> first submitted step: %s (from the provider's apply call: %s; %d partitions listed reassigning at first sight)",
			secs(tl.reassigning.Sub(applyStart)), secs(tl.reassigning.Sub(apply.start)), tl.reassigned)
	}
	if !tl.registered.IsZero() && !tl.reassigning.IsZero() {
		out("new broker registered and unfenced -> first submitted step: %s", secs(tl.reassigning.Sub(tl.registered)))
	}
	applyTook := apply.end.Sub(applyStart)
	ratio := 0.0
	if estimated > 0 {
		ratio = applyTook.Seconds() / estimated.Seconds()
	}
	out("apply: %s wall against estimated_duration %s (ratio %.1f)", secs(applyTook), estimated, ratio)
	tl.reportPhases(t, out, logPath, apply)
}

// reportPhases splits the road from the provider's apply call to the first
// step by the executor's log lines (TF_LOG=INFO), so that the platform's
// broker start is told apart from the provider's own work.
func (tl *timeline) reportPhases(t *testing.T, out func(string, ...any), logPath string, apply call) {
	t.Helper()
	at := func(parts ...string) time.Time { return logLineTime(logPath, apply.start, parts...) }
	type phase struct {
		name string
		at   time.Time
	}
	phases := []phase{
		{"apply call", apply.start},
		{"lease held, pre-checks, snapshot and preview plan done: asking the platform", at("asking the platform for brokers")},
		{"platform reported the broker added", at("scaling operation state", "state=SUCCEEDED")},
		{"broker 5 registered and unfenced (watcher)", tl.registered},
		{"executor saw the broker in the metadata", at("brokers added")},
		{"reassignment planned", at("planned reassignment")},
		{"first group starting (throttles next)", at("reassignment group starting")},
		{"first step listed by the controller (watcher)", tl.reassigning},
	}
	var seen, missed []phase
	for _, p := range phases {
		if p.at.IsZero() {
			missed = append(missed, p)
		} else {
			seen = append(seen, p)
		}
	}
	sort.SliceStable(seen, func(i, j int) bool { return seen[i].at.Before(seen[j].at) })
	var b strings.Builder
	prev := apply.start
	for _, p := range seen {
		fmt.Fprintf(&b, "\n  %+7.2fs %+7.2fs  %s", p.at.Sub(apply.start).Seconds(), p.at.Sub(prev).Seconds(), p.name)
		prev = p.at
	}
	for _, p := range missed {
		fmt.Fprintf(&b, "\n  %18s  %s: not seen", "", p.name)
	}
	out("from the provider's apply call to the first step (since the call, since the line before):%s", b.String())
}

// logLineTime is the time of the first line of the Terraform log at or
// after from that holds every part, or zero. Lines start with hclog's
// timestamp.
func logLineTime(path string, from time.Time, parts ...string) time.Time {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		ts, _, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts)
		if err != nil || at.Before(from.Truncate(time.Millisecond)) {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return at
		}
	}
	return time.Time{}
}

// timedServer times the provider's calls for kafkascale_cluster.
type timedServer struct {
	tfprotov6.ProviderServer
	tl *timeline
}

func (s timedServer) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	defer s.tl.took("ReadResource", req.TypeName, time.Now())
	return s.ProviderServer.ReadResource(ctx, req)
}

func (s timedServer) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	defer s.tl.took("PlanResourceChange", req.TypeName, time.Now())
	return s.ProviderServer.PlanResourceChange(ctx, req)
}

func (s timedServer) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	defer s.tl.took("ApplyResourceChange", req.TypeName, time.Now())
	return s.ProviderServer.ApplyResourceChange(ctx, req)
}
