package kafkatest

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type role string

const (
	roleController role = "controller"
	roleBroker     role = "broker"
)

// node is one KRaft node: its files, its port and, while it runs, its JVM.
type node struct {
	id   int32
	role role
	rack string
	port int
	dir  string // holds node.properties, data/, stdout.log
	logs string // holds server.log (dir, or under Options.LogDir)

	// inQuorum marks a controller that is one of several, so that its
	// name says which.
	inQuorum bool

	// extraPorts are a secured broker's other listeners, by name.
	extraPorts map[string]int

	// Set by run; guarded by Cluster.mu.
	proc  *os.Process
	done  chan struct{} // closed when the JVM has exited
	state nodeState
}

type nodeState int

const (
	nodeStopped nodeState = iota
	nodeStarting
	nodeRunning
	nodeStopping
)

func (n *node) name() string {
	if n.role == roleController {
		if n.inQuorum {
			return "controller-" + strconv.Itoa(int(n.id))
		}
		return "controller"
	}
	return "broker-" + strconv.Itoa(int(n.id))
}

func (n *node) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

func (n *node) propsPath() string { return filepath.Join(n.dir, "node.properties") }

// nodeProperties renders node.properties. Keys are sorted so that the file is
// stable and easy to diff between nodes.
func (c *Cluster) nodeProperties(n *node) string {
	p := map[string]string{
		"node.id":                        strconv.Itoa(int(n.id)),
		"process.roles":                  string(n.role),
		"controller.listener.names":      "CONTROLLER",
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs":                       filepath.Join(n.dir, "data"),
	}
	// A static quorum: every node knows the voters from its
	// configuration. Its controllers' storage is the same bootstrap
	// metadata for all (bootstrap.go); a dynamic quorum's would also hold
	// each cluster's voter set, with its ports and directory ids.
	voters := make([]string, len(c.controllers))
	for i, ctl := range c.controllers {
		voters[i] = fmt.Sprintf("%d@%s", ctl.id, ctl.addr())
	}
	p["controller.quorum.voters"] = strings.Join(voters, ",")
	if n.role == roleController {
		p["listeners"] = "CONTROLLER://" + n.addr()
		p["advertised.listeners"] = "CONTROLLER://" + n.addr()
		// The active controller appends a no-op record to the metadata
		// log every metadata.max.idle.interval.ms (500 ms by default),
		// and every node fetches and applies it: the most of what an
		// idle node here spends. Every 5 s instead cut an idle cluster's
		// CPU by a fifth (a controller and three brokers, 5.5-5.8 s a
		// minute against 4.6, 2026-12-06). Nothing here waits on these
		// records: brokers stay registered by their heartbeats.
		p["metadata.max.idle.interval.ms"] = "5000"
		c.tieredControllerProperties(p)
		c.secureProperties(n, p)
		maps.Copy(p, c.opts.ControllerProperties)
	} else {
		rf := strconv.Itoa(min(3, c.opts.Brokers))
		isr := strconv.Itoa(min(2, c.opts.Brokers))
		p["listeners"] = "PLAINTEXT://" + n.addr()
		p["advertised.listeners"] = "PLAINTEXT://" + n.addr()
		p["inter.broker.listener.name"] = "PLAINTEXT"
		p["broker.rack"] = n.rack
		// Tests want groups to form at once and topics only when asked for.
		// The broker's default rebalance protocols already include
		// streams (classic, consumer, streams in 4.4).
		p["group.initial.rebalance.delay.ms"] = "0"
		p["auto.create.topics.enable"] = "false"
		p["num.partitions"] = "1"
		p["default.replication.factor"] = rf
		// Internal topics must fit the initial broker count. Fewer
		// partitions than the production default keep plans and group
		// coordinator loading small; they are fixed when the topic is
		// created, so a test that needs more sets them in BrokerProperties.
		p["offsets.topic.replication.factor"] = rf
		p["offsets.topic.num.partitions"] = "10"
		p["transaction.state.log.replication.factor"] = rf
		p["transaction.state.log.min.isr"] = isr
		p["transaction.state.log.num.partitions"] = "10"
		if majorVersion(c.opts.KafkaVersion) >= 4 {
			// Coordinators Kafka 3.9 does not have; it would only log
			// these as unknown. The streams protocol (KIP-1071) has its
			// own initial rebalance delay, 3 s by default.
			p["group.streams.initial.rebalance.delay.ms"] = "0"
			p["share.coordinator.state.topic.replication.factor"] = rf
			p["share.coordinator.state.topic.min.isr"] = isr
		}
		c.tieredProperties(p)
		c.secureProperties(n, p)
		maps.Copy(p, c.opts.BrokerProperties)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s of cluster %s, written by kafkatest\n", n.name(), c.clusterID)
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

// log4j2Config writes every node's log to server.log in its log directory,
// given to the JVM as -Dkafka.logs.dir (the property Kafka's own
// configuration uses too). Nothing goes to stdout.
const log4j2Config = `<?xml version="1.0" encoding="UTF-8"?>
<Configuration status="WARN">
  <Appenders>
    <File name="server" fileName="${sys:kafka.logs.dir}/server.log">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Logger name="kafka" level="INFO"/>
    <Logger name="org.apache.kafka" level="INFO"/>
    <Logger name="state.change.logger" level="WARN"/>
    <Logger name="kafka.request.logger" level="WARN"/>
    <Root level="WARN"><AppenderRef ref="server"/></Root>
  </Loggers>
</Configuration>
`

const sigterm = syscall.SIGTERM

// lightJVMArgs are what every JVM here runs with, servers and formatter
// alike: the client compiler only and the serial collector. A formatter
// lives a second; the servers share two cores, as below.
var lightJVMArgs = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// serverJVMArgs suit JVMs that share two cores: a small heap and
// lightJVMArgs, plus the role's class-data archive.
//
// A cluster here is eight or so JVMs on two cores, most of them started
// moments before a test works them, where a production broker has its
// own cores and finished compiling long before an operation. Measured on
// the copy phase of BenchmarkReassignScaleOut's many-small (2026-12-03):
//   - with the server compiler, the compiler threads held about half the
//     machine's CPU throughout, starving the brokers' request handlers,
//     fetchers and metadata loaders; with the client compiler only they
//     took a sixth, three brokers started about 1.5 s sooner, and the copy
//     phase ran at 1.20-1.35 of its throttle limit instead of 1.28-1.50;
//   - G1's concurrent threads then held much of what was left: with the
//     serial collector the machine was busy 57-67% of the copy phase
//     instead of 76-82%, at the same speed. A 256 MiB heap collects in
//     milliseconds either way.
func (c *Cluster) serverJVMArgs(n *node) []string {
	args := append([]string{"-Xmx" + strconv.Itoa(c.opts.HeapMB) + "m", "-Djava.awt.headless=true"}, lightJVMArgs...)
	use, dump := c.cds.broker, c.cdsDump.broker
	if n.role == roleController {
		use, dump = c.cds.controller, c.cdsDump.controller
	}
	switch {
	case dump != "":
		args = append(args, "-XX:ArchiveClassesAtExit="+dump)
	case use != "":
		args = append(args, "-XX:SharedArchiveFile="+use, "-Xshare:auto")
	}
	if c.opts.JVMArgs != nil {
		args = append(args, c.opts.JVMArgs(n.id)...)
	}
	if dir := os.Getenv(EnvFlightRecordings); dir != "" {
		// Where the brokers' CPU goes in a test: each server records
		// with the JDK's flight recorder and writes the file when it
		// stops (a SIGKILLed one writes nothing). Read them with
		// "jfr print --events jdk.ExecutionSample" or "jfr summary".
		name := fmt.Sprintf("%s-%s-%d.jfr", c.clusterID, n.name(), time.Now().UnixNano())
		args = append(args, "-XX:StartFlightRecording=dumponexit=true,filename="+filepath.Join(dir, name))
	}
	return append(args, c.commonJVMArgs(n)...)
}

// EnvFlightRecordings names a directory: when set, every broker and
// controller records its run with the JDK's flight recorder into it, to
// profile where a test's Kafka CPU goes.
const EnvFlightRecordings = "KAFKASCALE_JFR_DIR"

// formatJVMArgs suit a JVM that lives a second: a smaller heap,
// lightJVMArgs and the controller's archive (a superset of the
// formatter's classes).
func (c *Cluster) formatJVMArgs(n *node) []string {
	return append(formatterJVMArgs(c.cds), c.commonJVMArgs(n)...)
}

// formatterJVMArgs are the formatter's own arguments, for a node's
// formatter and the bootstrap metadata template's alike.
func formatterJVMArgs(cds cdsArchives) []string {
	args := append([]string{"-Xmx128m"}, lightJVMArgs...)
	if cds.controller != "" {
		args = append(args, "-XX:SharedArchiveFile="+cds.controller, "-Xshare:auto")
	}
	return args
}

// commonJVMArgs point the JVM's temporary directory into the node's own
// directory: snappy-java unpacks its native library there at every start,
// and a SIGKILLed JVM never deletes it, so with the system's /tmp every
// killed broker left a file behind the cluster's cleanup. For the same
// reason the JVM keeps no performance data file: HotSpot writes it to
// /tmp/hsperfdata_<user> whatever java.io.tmpdir says.
func (c *Cluster) commonJVMArgs(n *node) []string {
	return []string{
		"-XX:-UsePerfData",
		"-Dlog4j2.configurationFile=" + filepath.Join(c.dir, "log4j2.xml"),
		"-Dkafka.logs.dir=" + n.logs,
		"-Djava.io.tmpdir=" + n.logs,
		"-cp", c.classpath,
	}
}

// prepare writes the node's files. The properties are rewritten on every
// start, so a restarted broker sees the controller's current address.
func (c *Cluster) prepare(n *node) error {
	if err := os.MkdirAll(filepath.Join(n.dir, "data"), 0o755); err != nil {
		return err
	}
	if err := c.mountDisk(n); err != nil {
		return err
	}
	if err := os.MkdirAll(n.logs, 0o755); err != nil {
		return err
	}
	if err := c.prepareSecure(n); err != nil {
		return err
	}
	return os.WriteFile(n.propsPath(), []byte(c.nodeProperties(n)), 0o644)
}

// format formats the node's storage as kafka.tools.StorageTool format
// would. A Kafka 4 broker needs only meta.properties; a Kafka 4 controller
// gets meta.properties and a copy of the bootstrap metadata template
// (bootstrap.go). A secured cluster's controllers and every Kafka 3.9 node
// run the formatter.
func (c *Cluster) format(ctx context.Context, n *node) error {
	switch {
	case n.role == roleBroker && majorVersion(c.opts.KafkaVersion) >= 4:
		return c.writeMeta(n)
	case n.role == roleController && c.bootstrap != "":
		if err := c.writeMeta(n); err != nil {
			return err
		}
		if err := copyBootstrap(c.bootstrap, filepath.Join(n.dir, "data")); err != nil {
			return fmt.Errorf("formatting the storage of %s: %w", n.name(), err)
		}
		return nil
	}
	args := append(c.formatJVMArgs(n), "kafka.tools.StorageTool", "format",
		"--cluster-id", c.clusterID, "--config", n.propsPath())
	args = append(args, c.scramFormatArgs(n)...)
	return runFormatter(ctx, c.java, args, "the storage of "+n.name()+" ("+n.dir+")")
}

// runFormatter runs the JVM of kafka.tools.StorageTool format; what names
// what it formats, for the error.
func runFormatter(ctx context.Context, java string, args []string, what string) error {
	cmd := exec.CommandContext(ctx, java, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// The formatter is short-lived; holding the thread keeps the death
	// signal tied to this goroutine for its whole run (see run).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("formatting %s: %w\n%s", what, err, tail(out.String(), 20))
	}
	return nil
}

// writeMeta writes a Kafka 4 node's meta.properties as the StorageTool
// would: for a broker that is all of its formatted storage (the bootstrap
// metadata is the controllers'). Writing it here saves a JVM per broker,
// about 0.85 s of CPU each on this machine, of which a CI run starts nearly
// three hundred. Kafka 3.9's formatter also writes a bootstrap checkpoint
// into every log directory, so 3.9 nodes still run it.
func (c *Cluster) writeMeta(n *node) error {
	path := filepath.Join(n.dir, "data", "meta.properties")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("formatting the storage of %s: %w", n.name(), err)
	}
	_, err = fmt.Fprintf(f, "# written by kafkatest\nversion=1\ncluster.id=%s\nnode.id=%d\ndirectory.id=%s\n",
		c.clusterID, n.id, randomDirectoryID())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// randomDirectoryID is a Kafka Uuid for a log directory: 16 random bytes,
// base64url without padding. Kafka reserves the ids whose first eight
// bytes are zero and last eight below 100, and never makes one whose
// text starts with "-" (it reads as a command-line flag); neither comes
// out of 128 random bits in practice, but both are ruled out anyway.
func randomDirectoryID() string {
	for {
		var b [16]byte
		_, _ = crand.Read(b[:])
		id := base64.RawURLEncoding.EncodeToString(b[:])
		if binary.BigEndian.Uint64(b[:8]) == 0 && binary.BigEndian.Uint64(b[8:]) < 100 || strings.HasPrefix(id, "-") {
			continue
		}
		return id
	}
}

// run starts the node's JVM and returns once it is started (not ready).
//
// Why a goroutine locked to its OS thread: the kernel delivers the
// parent-death signal (Pdeathsig, SIGKILL here) when the *thread* that
// forked the child exits, not the process. The Go runtime may end a thread
// whenever a goroutine exits while locked to it, and it moves unlocked
// goroutines between threads freely. Forking from a goroutine that stays
// locked to its thread until the JVM has exited gives the thread the JVM's
// lifetime, so the signal fires only when this whole process dies - by
// panic, os.Exit, a test timeout or SIGKILL - and then kills the JVM.
// Setpgid gives each JVM its own process group, so that a terminal's Ctrl-C
// reaches only the Go process, which stops the JVMs in order.
func (c *Cluster) run(n *node) error {
	stdout, err := os.OpenFile(filepath.Join(n.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append(c.serverJVMArgs(n), "kafka.Kafka", n.propsPath())
	cmd := exec.Command(c.java, args...)
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = stdout, stdout // *os.File: no copying goroutines
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Unlocked only once the child has exited. A goroutine that ends
		// while locked makes the runtime retire its thread, and the kernel
		// then sends the parent-death signal to every child that thread
		// ever forked, including ones forked by other goroutines before
		// this one locked it (a terraform run, another JVM).
		defer runtime.UnlockOSThread()

		// Starting under c.mu means Stop, which sets c.stopped under it,
		// either sees this JVM's process and kills it or keeps it from
		// starting at all.
		c.mu.Lock()
		if c.stopped {
			c.mu.Unlock()
			stdout.Close()
			started <- fmt.Errorf("not starting %s: the cluster is stopped", n.name())
			return
		}
		if err := cmd.Start(); err != nil {
			c.mu.Unlock()
			stdout.Close()
			started <- fmt.Errorf("starting %s: %w", n.name(), err)
			return
		}
		n.proc, n.done, n.state = cmd.Process, done, nodeStarting
		c.mu.Unlock()
		started <- nil
		_ = cmd.Wait()
		stdout.Close()
		// The state changes before done closes, so whoever waits on done
		// sees the node stopped.
		c.mu.Lock()
		if ps := cmd.ProcessState; ps != nil {
			c.cpu += ps.UserTime() + ps.SystemTime()
		}
		n.state, n.proc = nodeStopped, nil
		c.mu.Unlock()
		close(done)
	}()
	return <-started
}

// signal sends sig to the node's JVM and waits for it to exit. With SIGTERM
// Kafka shuts down in order (a broker first hands its leaderships over).
func (c *Cluster) signal(ctx context.Context, n *node, sig syscall.Signal) error {
	c.mu.Lock()
	proc, done := n.proc, n.done
	if proc != nil {
		n.state = nodeStopping
	}
	c.mu.Unlock()
	if proc == nil {
		return nil
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	_ = proc.Signal(sig)
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		_ = proc.Kill()
		<-done
		return fmt.Errorf("%s did not exit within the deadline after %v and was killed: %w", n.name(), sig, ctx.Err())
	}
}

// exited reports whether the node's JVM, once started, has exited. A node
// that was never started has not exited.
func (c *Cluster) exited(n *node) bool {
	c.mu.Lock()
	done := n.done
	c.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// failure describes why a node did not come up, with the end of its logs.
func (n *node) failure(what string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (port %d, dir %s) %s", n.name(), n.port, n.dir, what)
	for _, f := range []string{filepath.Join(n.dir, "stdout.log"), filepath.Join(n.logs, "server.log")} {
		if t := fileTail(f, 15, "ERROR", "FATAL", "Exception", "Error"); t != "" {
			fmt.Fprintf(&b, "\n--- %s ---\n%s", f, t)
		}
	}
	return errors.New(b.String())
}

func (n *node) bindFailed() bool {
	t := fileTail(filepath.Join(n.logs, "server.log"), 200, "Address already in use")
	return t != ""
}

// fileTail returns up to n lines from the end of path; with filters, only
// lines containing one of them.
func fileTail(path string, n int, filters ...string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(filters) > 0 {
		var kept []string
		for _, l := range lines {
			for _, f := range filters {
				if strings.Contains(l, f) {
					kept = append(kept, l)
					break
				}
			}
		}
		lines = kept
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitExit waits for the node's JVM to exit, at most d.
func waitExit(done chan struct{}, d time.Duration) bool {
	if done == nil {
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
