//go:build linux

// Command soak drives a real local Kafka cluster through random
// configuration changes and faults with the real Terraform CLI, and checks
// after every step, on the cluster itself, that nothing acknowledged is
// lost, no partition is offline, the plan tells the truth in both working
// directories, and a finished apply leaves no throttle, cordon or lease,
// with replicas even per rack. `make soak SEED=7 STEPS=40` runs it; the
// same seed draws the same steps and faults.
//
// Working directory A owns kafkascale_cluster; B owns the kafkascale_topic
// resources. Every exit path, SIGINT and SIGTERM included, kills the
// terraform processes and their providers, stops the cluster's JVMs and
// removes the temporary directory.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

const apiToken = "soak-token"

// soak is one run: the cluster, the two working directories, the load, the
// model of what each directory declares, and the tallies.
type soak struct {
	seed         uint64
	steps        int
	faultPercent int
	rng          *rand.Rand
	log          *log.Logger // the detailed log: every terraform output
	out          io.Writer   // the table

	c        *kafkatest.Cluster
	api      *flakyAPI
	apiURL   string
	closeAPI func()
	procs    *processes
	a, b     *workdir
	led      *ledger
	grp      *group
	streams  *streamsFixture

	want    desired
	settled map[string]bool // the directory's last apply succeeded, or its plan is empty
	// topicsTouched: B changed topics since A's plan was last empty. A
	// plan of A between (one that healed a dead broker, say) does not
	// clear it: the drift it may cause shows once nothing else does.
	topicsTouched bool
	brokerIDs     []int32 // registered brokers, by id, as of the last step
	dead          []int32 // brokers killed and not yet restarted or removed
	// restarted are the brokers restarted since the last apply.
	restarted map[int32]bool
	// controllerKilled: the one controller kill of the run is drawn.
	controllerKilled bool

	faults, violations int
}

func (s *soak) logf(format string, args ...any) { s.log.Printf(format, args...) }

func main() {
	seed := flag.Uint64("seed", 1, "seed of the random steps and faults")
	steps := flag.Int("steps", 40, "number of steps")
	faultPct := flag.Int("fault-percent", 50, "share of steps that carry a fault, in percent")
	keep := flag.Bool("keep", false, "keep the temporary directory (working directories, cluster files) after the run")
	logPath := flag.String("log", "", "where to write the detailed log (every terraform output); default inside the temporary directory")
	flag.Parse()
	os.Exit(soakMain(*seed, *steps, *faultPct, *keep, *logPath))
}

func soakMain(seed uint64, steps, faultPct int, keep bool, logPath string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root, err := os.MkdirTemp("", "kafkascale-soak-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	if logPath == "" {
		logPath = filepath.Join(root, "soak.log")
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	s := &soak{
		seed: seed, steps: steps, faultPercent: faultPct,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		log: log.New(logFile, "", log.Ltime|log.Lmicroseconds), out: os.Stdout,
		procs:   &processes{groups: map[int]*run{}},
		settled: map[string]bool{}, restarted: map[int32]bool{},
	}
	// A signal kills the applies at once, so that the step in flight ends
	// and the cleanup below runs.
	go func() {
		<-ctx.Done()
		s.procs.shutdown()
	}()
	defer func() {
		s.cleanup()
		logFile.Close()
		if keep {
			fmt.Fprintf(os.Stderr, "soak: kept %s\n", root)
		} else {
			_ = os.RemoveAll(root)
		}
	}()
	fmt.Fprintf(os.Stderr, "soak: seed=%d steps=%d, details in %s, the provider's logs in %s.provider-A and -B\n", seed, steps, logPath, logPath)
	if err := s.setup(ctx, root, logPath+".provider-"); err != nil {
		fmt.Fprintln(os.Stderr, "soak: setup:", err)
		return 1
	}
	lost, err := s.loop(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		return 1
	}
	fmt.Fprintf(s.out, "soak seed=%d steps=%d faults=%d violations=%d lost=%d\n", seed, steps, s.faults, s.violations, lost)
	if s.violations > 0 || lost > 0 {
		fmt.Fprintf(os.Stderr, "soak: rerun with: make soak SEED=%d STEPS=%d\n", seed, steps)
		return 1
	}
	return 0
}

// cleanup undoes setup, whatever part of it ran: the terraform processes
// and their providers first (they talk to the cluster), then the load,
// the scaling API, and the cluster's JVMs and mounts (kafkatest's Stop).
func (s *soak) cleanup() {
	s.procs.shutdown()
	if s.led != nil {
		s.led.stop()
	}
	if s.grp != nil {
		s.grp.stop()
	}
	if s.streams != nil {
		s.streams.stop()
	}
	if s.closeAPI != nil {
		s.closeAPI()
	}
	if s.c != nil {
		if err := s.c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "soak: stopping the cluster:", err)
		}
	}
}

// setup starts the cluster (4 brokers in racks a, b, c, a 3-controller
// quorum) with the scaling API in front of it, adopts it in A, creates the
// topics in B, fills them with a few MiB, and starts the ledger and the
// consumer group.
//
// providerLogs is where each directory's provider logs go, at INFO, with
// the directory's name appended: what a violation needs explained.
func (s *soak) setup(ctx context.Context, root, providerLogs string) error {
	start := time.Now()
	rc, err := buildProvider(root)
	if err != nil {
		return err
	}
	if s.a, err = newWorkdir("A", root, rc, providerLogs+"A", s.procs); err != nil {
		return err
	}
	if s.b, err = newWorkdir("B", root, rc, providerLogs+"B", s.procs); err != nil {
		return err
	}
	s.c, err = kafkatest.Start(ctx, kafkatest.Options{
		Brokers: 4, Controllers: 3, Racks: []string{"a", "b", "c"},
		Dir: filepath.Join(root, "cluster"), Logf: s.logf,
	})
	if err != nil {
		return err
	}
	api := kafkatest.NewScalingAPI(s.c, "local", apiToken)
	s.api = &flakyAPI{h: api}
	srv := httptest.NewServer(s.api) // 127.0.0.1
	s.apiURL = srv.URL
	s.closeAPI = func() { srv.Close(); api.Close() }

	resp, err := s.c.Admin().CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": ptr("2")}, "ledger")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating the ledger topic: %w", err)
	}
	// The app runs before B adopts it, as a live app would.
	if s.streams, err = startStreams(ctx, root, s.c.BootstrapServers(), s.c.Admin(), s.seed, s.logf); err != nil {
		return err
	}
	s.want = initialDesired(4)
	s.syncBrokers()
	if err := s.writeConfigs(); err != nil {
		return err
	}
	for _, w := range []*workdir{s.a, s.b} {
		code, out, err := w.exec("apply", "-auto-approve")
		if err != nil || code != 0 {
			return fmt.Errorf("first apply in %s: exit %d %v\n%s", w.name, code, err, out)
		}
		s.settled[w.name] = true
	}
	for topic, size := range map[string]int64{"plain": 12 << 20, "keyed": 6 << 20, "ledger": 4 << 20} {
		if _, err := kafkatest.Fill(ctx, s.c.BootstrapServers(), topic, size); err != nil {
			return fmt.Errorf("filling %s: %w", topic, err)
		}
	}
	if s.led, err = startLedger(s.c.BootstrapServers(), []string{"ledger", "keyed", "plain", "compacted"}); err != nil {
		return err
	}
	if s.grp, err = startGroup(s.c.BootstrapServers(), "soak-plain", "plain"); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "soak: setup took %s: 4 brokers, 3 controllers, topics adopted\n", time.Since(start).Round(time.Second))
	return nil
}

// loop runs the steps, prints a row per step, and reads the ledger one
// last time once its producer has stopped. It returns the acknowledged
// records lost.
func (s *soak) loop(ctx context.Context) (int, error) {
	fmt.Fprintln(s.out, header())
	for n := 1; n <= s.steps; n++ {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("interrupted at step %d: %w", n, ctx.Err())
		}
		st := s.drawStep(n)
		if st.fault != faultNone {
			s.faults++
		}
		s.logf("step %d: %s %s, fault %s at %s", n, st.dir, st.action, st.fault, st.delay)
		start := time.Now()
		outs, err := s.execute(ctx, st)
		if err != nil {
			return 0, err
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("interrupted at step %d: %w", n, ctx.Err())
		}
		s.syncBrokers()
		r := &row{seed: s.seed, st: st, secs: time.Since(start).Seconds(), outs: outs, cells: map[string]string{}}
		if err := s.check(ctx, r); err != nil {
			return 0, err
		}
		s.violations += len(r.problems)
		fmt.Fprintln(s.out, r.line())
	}
	s.led.stop()
	cl, err := s.clients()
	if err != nil {
		return 0, err
	}
	defer cl.close()
	final := s.led.verify(ctx, cl.adm, s.c.BootstrapServers())
	fmt.Fprintf(s.out, "ledger: %d acknowledged, %d failed (not acknowledged), final read: %s; group soak-plain consumed %d\n",
		final.acked, final.failed, final, s.grp.consumed.Load())
	if final.unread != "" {
		s.violations++
	}
	counts, problems := s.streams.finalCounts(ctx)
	fmt.Fprintf(s.out, "streams app %s: %s\n", streamsAppID, counts)
	for _, p := range problems {
		fmt.Fprintf(s.out, "     VIOLATION seed=%d end streams: %s\n", s.seed, p)
	}
	s.violations += len(problems)
	return final.lost + final.bad, nil
}

func ptr(s string) *string { return &s }
