package streamstest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"

	"github.com/hashicorp/go-retryablehttp"
)

// The rebalance protocols a Streams app can use (its group.protocol).
const (
	ProtocolClassic = "classic"
	ProtocolStreams = "streams"
)

// The app's topologies; see App.java.
const (
	// TopologyShop joins orders with customers, counts per product, and
	// has a branch whose repartition fixes its count (the default).
	TopologyShop = "shop"
	// TopologyTotals reads another app's orders topic (OrdersTopic),
	// joins it with its own refunds table and aggregates per product.
	TopologyTotals = "totals"
)

// The app's partitioner modes; see HomePartitioner.java.
const (
	// PartitionerProducer hands the home to the producer, which refreshes
	// its metadata until the partition exists (or fails after max.block.ms).
	PartitionerProducer = "producer"
	// PartitionerStrict throws when a key's home is beyond the partition
	// count in the producer's cached metadata.
	PartitionerStrict = "strict"
)

// LogDirEnv names a directory that keeps every instance's log after the
// test, under <dir>/<test name>/<instance>.log. Unset, logs go to a
// temporary directory that is removed with the test.
const LogDirEnv = "STREAMSTEST_LOG_DIR"

// AppOptions shape one instance of the Streams app.
type AppOptions struct {
	Bootstrap []string
	// AppID is the application.id, which is also the group id and the
	// prefix of the internal topics.
	AppID string
	// Protocol is ProtocolClassic, ProtocolStreams, or "" for the client's
	// default (classic in Kafka 4.4).
	Protocol string
	// MetadataMaxAge sets metadata.max.age.ms of the app's consumer,
	// producer and admin client; 0 keeps Kafka's default (5 minutes).
	MetadataMaxAge time.Duration
	// TopicPrefix is put before orders, customers, enriched and counts
	// (with TopologyTotals: refunds and totals).
	TopicPrefix string
	// Topology is TopologyShop (default) or TopologyTotals.
	Topology string
	// OrdersTopic, when set, is read instead of <prefix>orders: another
	// app's enriched sink (its values still name the product), which makes
	// this app downstream of that one.
	OrdersTopic string
	// Partitioner is PartitionerProducer (default) or PartitionerStrict.
	Partitioner string
	// OnError is the uncaught exception response: shutdown_client
	// (default), replace_thread or shutdown_application.
	OnError string
	// WaitForStart starts the JVM but not Streams; App.Start starts it.
	// A test uses it to time a join precisely.
	WaitForStart bool
	// Name tells instances apart in logs (default "a").
	Name string
	// LogDir receives <Name>.log. Default: LogDirEnv, else a t.TempDir.
	LogDir string
	// HeapMB is the JVM's -Xmx (default 256).
	HeapMB int
	// Config adds any other Streams or client property.
	Config map[string]string
}

// App is one running instance (JVM) of the Streams app.
type App struct {
	Name    string
	LogPath string

	opts      AppOptions
	healthURL string
	http      *retryablehttp.Client

	proc *os.Process
	done chan struct{}
	mu   sync.Mutex
	exit error
}

// Health is the app's GET /health answer.
type Health struct {
	State     string `json:"state"`
	Started   bool   `json:"started"`
	EverError bool   `json:"everError"`
	// Transitions are the KafkaStreams state changes, oldest first.
	Transitions []struct {
		At   time.Time `json:"at"`
		From string    `json:"from"`
		To   string    `json:"to"`
	} `json:"transitions"`
	// Uncaught are the exceptions the uncaught exception handler saw.
	Uncaught []struct {
		At     time.Time `json:"at"`
		Thread string    `json:"thread"`
		Trace  string    `json:"trace"`
	} `json:"uncaught"`
	ActiveTasks      []string `json:"activeTasks"`
	ActivePartitions []string `json:"activePartitions"`
}

// StartApp runs one instance of the app for t and stops it (SIGTERM, then
// SIGKILL) in t.Cleanup. It returns once the health endpoint answers; the
// app is then starting (or waiting for Start), not yet RUNNING.
func StartApp(t testing.TB, o AppOptions) *App {
	t.Helper()
	kafkatest.RequireAcceptance(t)
	a, err := startApp(t, o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Launch is StartApp for a goroutine: it returns the error instead of
// failing t (the app is still stopped in t.Cleanup).
func Launch(t testing.TB, o AppOptions) (*App, error) { return startApp(t, o) }

func startApp(t testing.TB, o AppOptions) (*App, error) {
	if o.LogDir == "" {
		if env := os.Getenv(LogDirEnv); env != "" {
			o.LogDir = filepath.Join(env, strings.ReplaceAll(t.Name(), "/", "_"))
		}
	}
	a, err := LaunchIn(t.Context(), t.TempDir(), o)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("instance %s (%s), last lines:\n%s", a.Name, a.LogPath, a.LogTail(30))
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		defer cancel()
		if err := a.Stop(stopCtx); err != nil {
			t.Errorf("stopping instance %s of the Streams app: %v", a.Name, err)
		}
	})
	return a, nil
}

// LaunchIn runs one instance of the app with its state and health port
// file in work, for a program that is not a test (the soak): the caller
// stops it with Stop before it removes work. Its log goes to o.LogDir, else
// to work. The JVM dies with the calling process (parent-death signal),
// whatever the caller does. It returns once the health endpoint answers.
func LaunchIn(ctx context.Context, work string, o AppOptions) (*App, error) {
	if o.Name == "" {
		o.Name = "a"
	}
	if o.HeapMB == 0 {
		o.HeapMB = 256
	}
	if o.AppID == "" || len(o.Bootstrap) == 0 {
		return nil, errors.New("streamstest: AppOptions.AppID and Bootstrap are required")
	}
	jar, err := Build(ctx)
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("streamstest: the Streams app needs java on PATH: %w", err)
	}
	logDir := o.LogDir
	if logDir == "" {
		logDir = work
	}
	for _, d := range []string{work, logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	a := &App{Name: o.Name, LogPath: filepath.Join(logDir, o.Name+".log"), opts: o, done: make(chan struct{})}
	portFile := filepath.Join(work, "health.port")
	args := []string{
		// The client compiler only, as the brokers run: an app here
		// lives a minute or two beside a cluster on two cores, and the
		// server compiler's threads spent most of its CPU. Measured on
		// TestExpandStreamsProtocol (2026-12-06, quiet machine): the
		// apps' JVMs used 39 s of CPU with it and 13 s without, and the
		// test took 74 s and 60 s.
		// No performance data file: a killed JVM leaves it in
		// /tmp/hsperfdata_<user>.
		"-Xmx" + strconv.Itoa(o.HeapMB) + "m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true", "-XX:-UsePerfData",
		"-jar", jar,
		"--bootstrap", strings.Join(o.Bootstrap, ","),
		"--application-id", o.AppID,
		"--state-dir", filepath.Join(work, "state"),
		"--health-port-file", portFile,
		"--topic-prefix", o.TopicPrefix,
		"--wait-for-start", strconv.FormatBool(o.WaitForStart),
	}
	if o.Protocol != "" {
		args = append(args, "--group-protocol", o.Protocol)
	}
	if o.OrdersTopic != "" {
		args = append(args, "--orders-topic", o.OrdersTopic)
	}
	if o.Topology != "" {
		args = append(args, "--topology", o.Topology)
	}
	if o.MetadataMaxAge > 0 {
		args = append(args, "--metadata-max-age-ms", strconv.FormatInt(o.MetadataMaxAge.Milliseconds(), 10))
	}
	if o.Partitioner != "" {
		args = append(args, "--partitioner", o.Partitioner)
	}
	if o.OnError != "" {
		args = append(args, "--on-error", o.OnError)
	}
	for _, k := range slices.Sorted(maps.Keys(o.Config)) {
		args = append(args, "--config", k+"="+o.Config[k])
	}

	logFile, err := os.OpenFile(a.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(java, args...)
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Setpgid keeps a terminal's Ctrl-C away from the JVM, so that the test
	// stops it in order; the parent-death signal kills it if this process
	// dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the forking thread exits; a
		// goroutine that stays locked to its thread until the JVM is gone
		// gives that thread the JVM's lifetime.
		runtime.LockOSThread()
		// Unlocked only once the child has exited. A goroutine that ends
		// while locked makes the runtime retire its thread, and the kernel
		// then sends the parent-death signal to every child that thread
		// ever forked, including ones forked by other goroutines before
		// this one locked it (a terraform run, another JVM).
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			logFile.Close()
			started <- fmt.Errorf("streamstest: starting instance %s of the Streams app: %w", o.Name, err)
			return
		}
		started <- nil
		err := cmd.Wait()
		logFile.Close()
		a.mu.Lock()
		a.exit = err
		a.mu.Unlock()
		close(a.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	a.proc = cmd.Process
	hc := retryablehttp.NewClient()
	hc.Logger = nil
	hc.RetryMax = 2
	hc.RetryWaitMin = 50 * time.Millisecond
	hc.RetryWaitMax = 200 * time.Millisecond
	hc.HTTPClient.Timeout = 5 * time.Second
	a.http = hc

	waitCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		if raw, err := os.ReadFile(portFile); err == nil {
			a.healthURL = "http://127.0.0.1:" + strings.TrimSpace(string(raw))
			return a, nil
		}
		select {
		case <-a.done:
			return nil, fmt.Errorf("streamstest: instance %s of the Streams app exited before serving /health (%v); log %s:\n%s",
				o.Name, a.exitErr(), a.LogPath, a.LogTail(30))
		case <-waitCtx.Done():
			// No caller holds the instance yet: stop it here.
			stopCtx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			_ = a.Stop(stopCtx)
			return nil, fmt.Errorf("streamstest: instance %s of the Streams app served no /health within 90s; log %s:\n%s",
				o.Name, a.LogPath, a.LogTail(30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (a *App) exitErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.exit
}

// Exited reports whether the JVM has exited.
func (a *App) Exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// Start releases an app started with WaitForStart: Streams starts and
// joins the group.
func (a *App) Start(ctx context.Context) error {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, a.healthURL+"/start", nil)
	if err != nil {
		return err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("starting Streams in instance %s: %w", a.Name, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("starting Streams in instance %s: POST /start answered %s", a.Name, resp.Status)
	}
	return nil
}

// Health reads GET /health.
func (a *App) Health(ctx context.Context) (Health, error) {
	var h Health
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, a.healthURL+"/health", nil)
	if err != nil {
		return h, err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return h, fmt.Errorf("reading the health of instance %s: %w", a.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return h, fmt.Errorf("reading the health of instance %s: GET /health answered %s", a.Name, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return h, fmt.Errorf("decoding the health of instance %s: %w", a.Name, err)
	}
	return h, nil
}

// ErrAppError is wrapped by WaitState when the app enters ERROR or
// PENDING_ERROR while waited for.
var ErrAppError = errors.New("the Streams app entered ERROR or PENDING_ERROR")

// WaitState polls until the app is in state (e.g. "RUNNING"). It returns
// early, wrapping ErrAppError, if the app was ever in ERROR or
// PENDING_ERROR, and fails if the JVM exits.
func (a *App) WaitState(ctx context.Context, state string) error {
	for {
		h, err := a.Health(ctx)
		if err == nil {
			if h.EverError {
				return fmt.Errorf("waiting for instance %s to be %s: %w (now %s): %s", a.Name, state, ErrAppError, h.State, firstLine(h))
			}
			if h.State == state {
				return nil
			}
		}
		select {
		case <-a.done:
			return fmt.Errorf("waiting for instance %s to be %s: the JVM exited (%v)", a.Name, state, a.exitErr())
		case <-ctx.Done():
			return fmt.Errorf("waiting for instance %s to be %s (last health error: %v): %w", a.Name, state, err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func firstLine(h Health) string {
	if len(h.Uncaught) == 0 {
		return "no uncaught exception recorded"
	}
	line, _, _ := strings.Cut(h.Uncaught[0].Trace, "\n")
	return line
}

// EverError reports whether the app was ever in ERROR or PENDING_ERROR.
func (a *App) EverError(ctx context.Context) (bool, error) {
	h, err := a.Health(ctx)
	return h.EverError, err
}

// Pause freezes the JVM (SIGSTOP): its members send no heartbeat and do
// not leave, so the group coordinator keeps them, and what it resolved from
// their last heartbeat, until their session times out. Resume undoes it.
func (a *App) Pause() error {
	if err := a.proc.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pausing instance %s: %w", a.Name, err)
	}
	return nil
}

// Resume lets a paused JVM run again (SIGCONT).
func (a *App) Resume() error {
	if err := a.proc.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resuming instance %s: %w", a.Name, err)
	}
	return nil
}

// Stop sends SIGTERM (the app closes Streams and leaves the group) and
// waits for the JVM to exit; at ctx's end it sends SIGKILL. A paused JVM
// is resumed first, or it could not act on the SIGTERM.
func (a *App) Stop(ctx context.Context) error {
	if a.Exited() {
		return nil
	}
	_ = a.proc.Signal(syscall.SIGCONT)
	_ = a.proc.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		_ = a.proc.Kill()
		<-a.done
		return fmt.Errorf("instance %s did not exit after SIGTERM and was killed: %w", a.Name, ctx.Err())
	}
}

// LogTail returns the last n lines of the instance's log.
func (a *App) LogTail(n int) string {
	raw, err := os.ReadFile(a.LogPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return lastLines(string(raw), n)
}

// LogLines returns the log lines that match re, with up to after following
// lines each (stack traces), in order.
func (a *App) LogLines(re *regexp.Regexp, after int) ([]string, error) {
	f, err := os.Open(a.LogPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	left := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case re.MatchString(line):
			out = append(out, line)
			left = after
		case left > 0:
			out = append(out, line)
			left--
		}
	}
	return out, sc.Err()
}
