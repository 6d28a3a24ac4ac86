package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// EnvAcceptance switches on the tests that start JVMs or servers (Kafka
// brokers, the Streams app, Prometheus): `make test` sets it and `make
// testunit` does not, so the unit tests stay quick. It is Terraform's own
// acceptance-test variable, so one switch gates every such test.
const EnvAcceptance = "TF_ACC"

// RequireAcceptance skips t unless EnvAcceptance is set. StartT and Shared
// call it; a test that starts JVMs some other way calls it first.
func RequireAcceptance(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvAcceptance) == "" {
		t.Skip("starts real Kafka processes: set " + EnvAcceptance + "=1 (make test does)")
	}
}

// StartT starts a cluster for one test and stops it in t.Cleanup. It fails
// the test at once if the cluster does not come up. When the test fails, the
// cleanup logs the errors of each node's server.log before the directory
// goes.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	RequireAcceptance(t)
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx := t.Context()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting the Kafka cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.logErrors(t.Logf)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the Kafka cluster: %v", err)
		}
	})
	return c
}

func (c *Cluster) logErrors(logf func(string, ...any)) {
	c.mu.Lock()
	nodes := slices.Clone(c.controllers)
	nodes = append(nodes, c.sortedBrokersLocked()...)
	c.mu.Unlock()
	for _, n := range nodes {
		if n == nil {
			continue
		}
		if t := fileTail(filepath.Join(n.logs, "server.log"), 20, "ERROR", "FATAL"); t != "" {
			logf("%s server.log errors:\n%s", n.name(), t)
		}
	}
}

var (
	sharedOnce sync.Once
	shared     *Cluster
	sharedErr  error
)

// Shared returns the one cluster of this test binary, started with opts by
// the first caller; later callers' opts are ignored. Use it with Main, which
// stops it when the tests end:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m, nil) }
//
//	func TestX(t *testing.T) {
//		c := kafkatest.Shared(t, kafkatest.Options{})
//		...
//	}
//
// Without Main the cluster still dies with the process (parent-death signal
// and reaper), just less tidily.
func Shared(t testing.TB, opts Options) *Cluster {
	t.Helper()
	RequireAcceptance(t)
	sharedOnce.Do(func() {
		if opts.Logf == nil {
			opts.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
		}
		c, err := Start(context.Background(), opts)
		sharedMu.Lock()
		shared, sharedErr = c, err
		sharedMu.Unlock()
	})
	sharedMu.Lock()
	c, err := shared, sharedErr
	sharedMu.Unlock()
	if err != nil {
		t.Fatalf("starting the shared Kafka cluster: %v", err)
	}
	return c
}

// sharedMu guards shared and sharedErr once StopShared may run.
var sharedMu sync.Mutex

// StopShared stops the shared cluster, if one was started, for a test
// binary whose remaining tests no longer use it: its idle JVMs cost CPU
// that those tests need. Shared fails the tests that call it afterwards.
func StopShared() error {
	sharedOnce.Do(func() {}) // none started: none will be
	sharedMu.Lock()
	c := shared
	shared, sharedErr = nil, errors.New("the shared cluster was stopped (StopShared)")
	sharedMu.Unlock()
	if c == nil {
		return nil
	}
	return c.Stop()
}

// Main runs a test binary whose tests share clusters, and stops every
// cluster this process started when the tests end, when run panics, or on
// SIGINT or SIGTERM. run defaults to m.Run; pass a function to start a
// cluster before the tests:
//
//	var cluster *kafkatest.Cluster
//
//	func TestMain(m *testing.M) {
//		kafkatest.Main(m, func() int {
//			c, err := kafkatest.Start(context.Background(), kafkatest.Options{})
//			if err != nil {
//				fmt.Fprintln(os.Stderr, err)
//				return 1
//			}
//			cluster = c
//			return m.Run()
//		})
//	}
//
// Main calls os.Exit with run's result. A panic inside a test's own
// goroutine, or a `go test -timeout` expiry, ends the process without
// running Main's cleanup; the JVMs then die by their parent-death signal and
// the reaper removes the directories.
func Main(m *testing.M, run func() int) {
	if run == nil {
		run = m.Run
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "kafkatest: %v: stopping Kafka clusters\n", sig)
		stopAll()
		os.Exit(1)
	}()
	code := func() int {
		defer func() {
			if r := recover(); r != nil {
				stopAll()
				panic(r)
			}
		}()
		return run()
	}()
	stopAll()
	printCPU()
	os.Exit(code)
}

// jvmCPU sums the CPU time of every cluster's JVMs this process stopped
// (Cluster.Stop logs each).
var jvmCPU atomic.Int64

// printCPU says what the package's tests cost the machine: the test
// binary's own CPU time and that of the processes it started and waited
// for (Kafka JVMs, Terraform runs, Streams apps, Prometheus), from
// getrusage. scripts/testtimes prints it per package.
func printCPU() {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return
	}
	cpu := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano()).Round(time.Second)
	}
	fmt.Printf("kafkatest: CPU of this package: test binary %v, the processes it started %v, of which Kafka JVMs %v\n",
		cpu(self), cpu(children), time.Duration(jvmCPU.Load()).Round(time.Second))
}
