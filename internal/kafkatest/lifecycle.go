package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	liveMu sync.Mutex
	live   = map[*Cluster]bool{}
)

// Start forms a cluster and returns once every broker is registered and
// unfenced. On any failure it leaves nothing running.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	return start(ctx, opts, nil)
}

// start forms a cluster; with dump set, its JVMs write class-data archives
// there on exit instead of using the trained ones.
func start(ctx context.Context, opts Options, dump *cdsArchives) (_ *Cluster, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	// The first fetch of the jars may take long; the start timeout begins
	// after it.
	libs, err := EnsureKafkaVersion(ctx, opts.KafkaVersion)
	if err != nil {
		return nil, err
	}
	var rsmJar string
	if opts.Tiered != nil {
		if rsmJar, err = BuildRemoteStorage(ctx); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	java, err := findJava()
	if err != nil {
		return nil, err
	}
	classpath, err := classpathOf(libs)
	if err != nil {
		return nil, err
	}
	if err := sweepStale(ctx); err != nil {
		opts.Logf("kafkatest: %v", err)
	}
	var cds, cdsDump cdsArchives
	if dump != nil {
		cdsDump = *dump
	} else {
		cds = ensureCDS(ctx, opts.KafkaVersion, libs, java, opts.Logf)
	}
	var bootstrap string
	if majorVersion(opts.KafkaVersion) >= 4 && opts.Security == nil && !opts.formatEach {
		bootstrap = bootstrapTemplate(ctx, libs, java, classpath, cds, opts.Logf)
	}

	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kafkascale-cluster-"); err != nil {
			return nil, err
		}
	} else {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, err
		}
		if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
			return nil, fmt.Errorf("kafkatest: cluster directory %s is not empty; a cluster may already run there", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}

	c := &Cluster{opts: opts, dir: dir, classpath: classpath, java: java, rsmJar: rsmJar, cds: cds, cdsDump: cdsDump, bootstrap: bootstrap, brokers: map[int32]*node{}, nextID: 1, began: began}
	liveMu.Lock()
	live[c] = true
	liveMu.Unlock()
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if c.record, err = writeOwnerRecord(dir, !opts.KeepDir); err != nil {
		return nil, err
	}
	if !opts.KeepDir {
		if c.reaper, err = startReaper(dir, c.record); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "log4j2.xml"), []byte(log4j2Config), 0o644); err != nil {
		return nil, err
	}
	if c.clusterID, err = newClusterID(); err != nil {
		return nil, err
	}
	if err := c.setupSecurity(); err != nil {
		return nil, err
	}

	// A port taken by another process between our check and the JVM's bind
	// fails the node; the whole formation is retried on fresh ports.
	for attempt := 1; ; attempt++ {
		err = c.form(ctx)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			return nil, err
		}
		opts.Logf("kafkatest: %v; retrying on other ports", err)
		if err := c.reset(ctx); err != nil {
			return nil, err
		}
	}

	c.mu.Lock()
	c.client, err = kgo.NewClient(kgo.SeedBrokers(c.addrsLocked()...), kgo.MetadataMinAge(250*time.Millisecond))
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	c.admin = kadm.NewClient(c.client)
	want := make([]int32, opts.Brokers)
	for i := range want {
		want[i] = int32(i + 1)
	}
	if err := c.waitClusterView(ctx, want, nil); err != nil {
		return nil, err
	}
	if err := c.grantRestricted(ctx); err != nil {
		return nil, err
	}
	if opts.Tiered != nil {
		if err := c.waitRemoteLogMetadata(ctx); err != nil {
			return nil, err
		}
	}
	controllers := "controller"
	if opts.Controllers > 1 {
		controllers = fmt.Sprintf("%d controllers", opts.Controllers)
	}
	opts.Logf("kafkatest: Kafka %s: %s and %d brokers of cluster %s ready in %v (dir %s)",
		opts.KafkaVersion, controllers, opts.Brokers, c.clusterID, time.Since(began).Round(time.Millisecond), dir)
	return c, nil
}

var errPortTaken = errors.New("listener port taken by another process")

// form formats and starts the controllers and the initial brokers, all at
// once: a broker waits by itself for the controllers to answer.
func (c *Cluster) form(ctx context.Context) error {
	c.controllers = nil
	for i := range c.opts.Controllers {
		cport, err := freePort()
		if err != nil {
			return err
		}
		n := &node{id: ControllerID + int32(i), role: roleController, port: cport, inQuorum: c.opts.Controllers > 1}
		n.dir = filepath.Join(c.dir, n.name())
		n.logs = c.logDir(n)
		c.controllers = append(c.controllers, n)
	}
	nodes := slices.Clone(c.controllers)
	c.mu.Lock()
	for i := 1; i <= c.opts.Brokers; i++ {
		port, err := freePort()
		if err != nil {
			c.mu.Unlock()
			return err
		}
		n := c.newBrokerLocked(port, c.opts.Racks[(i-1)%len(c.opts.Racks)])
		nodes = append(nodes, n)
	}
	c.mu.Unlock()

	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.launch(ctx, n)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reset kills every node and forgets them, so that form can run again.
func (c *Cluster) reset(ctx context.Context) error {
	c.killAll()
	if err := KillNodeProcesses(ctx, c.dir); err != nil {
		return err
	}
	c.mu.Lock()
	c.brokers, c.nextID = map[int32]*node{}, 1
	c.mu.Unlock()
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "controller") || strings.HasPrefix(e.Name(), "broker-") {
			os.RemoveAll(filepath.Join(c.dir, e.Name()))
		}
	}
	return nil
}

func (c *Cluster) newBrokerLocked(port int, rack string) *node {
	id := c.nextID
	c.nextID++
	return c.brokerNodeLocked(id, port, rack)
}

// brokerNodeLocked registers the node of broker id here, not yet started.
func (c *Cluster) brokerNodeLocked(id int32, port int, rack string) *node {
	n := &node{id: id, role: roleBroker, rack: rack, port: port}
	n.dir = filepath.Join(c.dir, n.name())
	n.logs = c.logDir(n)
	c.brokers[id] = n
	return n
}

func (c *Cluster) logDir(n *node) string {
	if c.opts.LogDir == "" {
		return n.dir
	}
	return filepath.Join(c.opts.LogDir, c.clusterID+"-"+n.name())
}

// launch prepares, formats and runs one node; for a broker it returns once
// the broker is ready.
func (c *Cluster) launch(ctx context.Context, n *node) error {
	if err := c.prepare(n); err != nil {
		return err
	}
	if err := c.format(ctx, n); err != nil {
		return err
	}
	if err := c.startAndWait(ctx, n); err != nil {
		return err
	}
	if n.role != roleController && c.client != nil {
		c.reseed()
	}
	return nil
}

// bound gives ctx the start timeout unless it has a deadline already, so
// that no wait on a JVM is endless.
func (c *Cluster) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opts.StartTimeout)
}

func (c *Cluster) startAndWait(ctx context.Context, n *node) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if err := c.run(n); err != nil {
		return err
	}
	if n.role == roleController {
		return nil
	}
	if err := c.waitBrokerReady(ctx, n); err != nil {
		return err
	}
	// Once the cluster is formed, also wait until the shared client's
	// DescribeCluster lists it unfenced, so that Kafka's view agrees with
	// ours when this returns.
	c.mu.Lock()
	client := c.client
	c.mu.Unlock()
	if client != nil {
		if err := c.waitClusterView(ctx, []int32{n.id}, nil); err != nil {
			return err
		}
	}
	c.mu.Lock()
	if n.state == nodeStarting {
		n.state = nodeRunning
	}
	c.mu.Unlock()
	return nil
}

// Stop kills every node, closes the clients and removes the cluster's
// directory unless Options.KeepDir. It is idempotent and safe to call from
// several goroutines.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	client := c.client
	c.mu.Unlock()

	if client != nil {
		client.Close()
	}
	c.killAll()
	c.mu.Lock()
	cpu := c.cpu
	c.mu.Unlock()
	jvmCPU.Add(int64(cpu))
	c.opts.Logf("kafkatest: cluster %s stopped: its JVMs used %v of CPU in %v", c.clusterID,
		cpu.Round(100*time.Millisecond), time.Since(c.began).Round(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	// Belt and braces: also any formatter or node this process lost track of.
	if err := KillNodeProcesses(ctx, c.dir); err != nil {
		errs = append(errs, err)
	}
	if err := c.unmountDisks(); err != nil {
		errs = append(errs, err)
	}
	if !c.opts.KeepDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing cluster directory: %w", err))
		}
	}
	if c.record != "" {
		removeOwnerRecord(c.record)
	}
	if c.reaper != nil {
		c.reaper.Close()
	}
	liveMu.Lock()
	delete(live, c)
	liveMu.Unlock()
	return errors.Join(errs...)
}

func (c *Cluster) killAll() {
	c.mu.Lock()
	nodes := slices.Clone(c.controllers)
	for _, n := range c.brokers {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	for _, n := range nodes {
		c.mu.Lock()
		proc, done := n.proc, n.done
		c.mu.Unlock()
		if proc != nil {
			_ = proc.Kill()
			waitExit(done, 30*time.Second)
		}
	}
}

// stopAll stops every cluster this process started.
func stopAll() {
	liveMu.Lock()
	cs := make([]*Cluster, 0, len(live))
	for c := range live {
		cs = append(cs, c)
	}
	liveMu.Unlock()
	for _, c := range cs {
		_ = c.Stop()
	}
}

// newClusterID makes a Kafka cluster id: 16 random bytes, URL-safe base64
// without padding, as kafka-storage random-uuid prints. Like Kafka's own
// generator it avoids a leading '-', which command lines would take for a
// flag.
func newClusterID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		id := base64.RawURLEncoding.EncodeToString(b[:])
		if id[0] != '-' {
			return id, nil
		}
	}
}

// classpathOf lists the jars of libs in name order. An explicit, sorted list
// (rather than libs/*, which the JVM expands in directory order) keeps the
// class path identical from run to run, which a class-data archive requires.
func classpathOf(libs string) (string, error) {
	jars, err := filepath.Glob(filepath.Join(libs, "*.jar"))
	if err != nil || len(jars) == 0 {
		return "", fmt.Errorf("kafkatest: no jars in %s: %v", libs, err)
	}
	slices.Sort(jars)
	return strings.Join(jars, string(os.PathListSeparator)), nil
}

func findJava() (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("kafkatest: Kafka %s needs a Java 17+ runtime: no java on PATH or in $JAVA_HOME (e.g. apt-get install openjdk-17-jre-headless): %w", KafkaVersion, err)
	}
	return p, nil
}
