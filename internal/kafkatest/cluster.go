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
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// ControllerID is the node.id of the cluster's first KRaft controller (its
// only one unless Options.Controllers asks for a quorum, whose controllers
// are ControllerID, ControllerID+1, ...). Brokers are numbered from 1, so
// tests read as "broker 1 in rack a".
const ControllerID int32 = 3000

// Options shape a cluster. The zero value is three brokers in racks a, b, c.
type Options struct {
	// Brokers is the number of brokers to start with (default 3).
	Brokers int
	// Controllers is the number of KRaft controllers: 0 or 1 for one
	// controller (a single-voter dynamic quorum), 3 for a static quorum of
	// three voters (controller.quorum.voters), which survives losing one.
	Controllers int
	// Racks are cycled over the brokers: broker i gets Racks[(i-1)%len].
	// Default a, b, c.
	Racks []string
	// HeapMB is each node's -Xmx (default 256).
	HeapMB int
	// BrokerProperties and ControllerProperties override or add to the
	// generated node.properties.
	BrokerProperties     map[string]string
	ControllerProperties map[string]string
	// JVMArgs returns extra JVM arguments for a node (ControllerID or a
	// broker id), e.g. a -javaagent for a metrics exporter.
	JVMArgs func(nodeID int32) []string
	// Dir holds the cluster's files. Default: a new temporary directory.
	// A given Dir must be empty or not exist yet.
	Dir string
	// KeepDir keeps Dir after Stop (and after this process dies). By
	// default it is removed.
	KeepDir bool
	// LogDir, when set, receives each node's server.log under LogDir/<node>,
	// and is never removed: useful to keep logs of a CI run.
	LogDir string
	// StartTimeout bounds Start (after the jars are fetched), and each
	// broker start, stop or unregistration whose ctx has no deadline
	// (default 3m).
	StartTimeout time.Duration
	// Logf receives progress lines (StartT uses t.Logf). Default: discard.
	Logf func(format string, args ...any)
	// Security, when set, adds SASL_SSL and mutual-TLS listeners, SCRAM
	// users and ACLs; see Security.
	Security *Security
	// DiskBytes, when set, puts each broker's log.dirs on its own tmpfs of
	// this size (brokers added later too), so that a disk can really fill
	// up; see DiskUse. Mounting needs root. The disks are unmounted on Stop,
	// so their data goes even with KeepDir.
	DiskBytes int64
}

func (o Options) withDefaults() (Options, error) {
	if o.Brokers == 0 {
		o.Brokers = 3
	}
	if o.Brokers < 1 || o.Brokers >= int(ControllerID) {
		return o, fmt.Errorf("kafkatest: Options.Brokers must be between 1 and %d, got %d", ControllerID-1, o.Brokers)
	}
	switch o.Controllers {
	case 0:
		o.Controllers = 1
	case 1, 3:
	default:
		return o, fmt.Errorf("kafkatest: Options.Controllers must be 1 or 3, got %d", o.Controllers)
	}
	if len(o.Racks) == 0 {
		o.Racks = []string{"a", "b", "c"}
	}
	for _, r := range o.Racks {
		if r == "" || strings.ContainsAny(r, " \t\n=") {
			return o, fmt.Errorf("kafkatest: rack %q is not a valid broker.rack", r)
		}
	}
	if o.HeapMB == 0 {
		o.HeapMB = 256
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o, nil
}

// Broker is one broker as this package runs it.
type Broker struct {
	ID   int32
	Rack string
	// Addr is the PLAINTEXT listener, host:port.
	Addr string
	// Running is true while the broker's JVM runs (State STARTING, RUNNING
	// or STOPPING).
	Running bool
	State   platform.BrokerState
}

// Cluster is a running KRaft cluster: one controller (or a quorum of three)
// and brokers 1..N. Its
// methods are safe for concurrent use.
type Cluster struct {
	opts      Options
	dir       string
	classpath string
	java      string
	cds       cdsArchives // archives to start from
	cdsDump   cdsArchives // archives to write on exit (training only)
	clusterID string

	// controllers are the KRaft controllers by id; controllers[0] is
	// ControllerID.
	controllers []*node

	mu      sync.Mutex
	brokers map[int32]*node // registered brokers, running or not
	nextID  int32
	client  *kgo.Client
	admin   *kadm.Client
	stopped bool

	reaper *os.File
	record string

	secure *secureState // nil unless Options.Security
}

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
	libs, err := EnsureKafka(ctx)
	if err != nil {
		return nil, err
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
		cds = ensureCDS(ctx, libs, java, opts.Logf)
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

	c := &Cluster{opts: opts, dir: dir, classpath: classpath, java: java, cds: cds, cdsDump: cdsDump, brokers: map[int32]*node{}, nextID: 1}
	liveMu.Lock()
	live[c] = true
	liveMu.Unlock()
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if !opts.KeepDir {
		if c.reaper, err = startReaper(dir); err != nil {
			return nil, err
		}
	}
	if c.record, err = writeOwnerRecord(dir, !opts.KeepDir); err != nil {
		return nil, err
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
	controllers := "controller"
	if opts.Controllers > 1 {
		controllers = fmt.Sprintf("%d controllers", opts.Controllers)
	}
	opts.Logf("kafkatest: %s and %d brokers of cluster %s ready in %v (dir %s)",
		controllers, opts.Brokers, c.clusterID, time.Since(began).Round(time.Millisecond), dir)
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
	return c.startAndWait(ctx, n)
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

// ClusterID is Kafka's cluster id (the one the storage was formatted with).
func (c *Cluster) ClusterID() string { return c.clusterID }

// Dir is the directory holding the cluster's files.
func (c *Cluster) Dir() string { return c.dir }

// ControllerAddr is the CONTROLLER listener, host:port, of the first
// controller (ControllerID).
func (c *Cluster) ControllerAddr() string { return c.controllers[0].addr() }

// ControllerAddrs are the CONTROLLER listeners of every controller, by id.
func (c *Cluster) ControllerAddrs() []string {
	addrs := make([]string, len(c.controllers))
	for i, n := range c.controllers {
		addrs[i] = n.addr()
	}
	return addrs
}

// ControllerIDs are the node ids of the controllers.
func (c *Cluster) ControllerIDs() []int32 {
	ids := make([]int32, len(c.controllers))
	for i, n := range c.controllers {
		ids[i] = n.id
	}
	return ids
}

// Racks are the racks the cluster's brokers are spread over.
func (c *Cluster) Racks() []string { return slices.Clone(c.opts.Racks) }

// BootstrapServers lists the PLAINTEXT listeners of the running brokers,
// by broker id.
func (c *Cluster) BootstrapServers() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addrsLocked()
}

func (c *Cluster) addrsLocked() []string {
	var addrs []string
	for _, n := range c.sortedBrokersLocked() {
		if n.proc != nil {
			addrs = append(addrs, n.addr())
		}
	}
	return addrs
}

func (c *Cluster) sortedBrokersLocked() []*node {
	ns := make([]*node, 0, len(c.brokers))
	for _, n := range c.brokers {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].id < ns[j].id })
	return ns
}

// Client is a franz-go client seeded with the initial brokers. It is closed
// by Stop.
func (c *Cluster) Client() *kgo.Client { return c.client }

// Admin is a kadm client over Client. It is closed by Stop.
func (c *Cluster) Admin() *kadm.Client { return c.admin }

// Brokers lists the registered brokers, running or not, by id. An
// unregistered broker is no longer listed.
func (c *Cluster) Brokers() []Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Broker
	for _, n := range c.sortedBrokersLocked() {
		b := Broker{ID: n.id, Rack: n.rack, Addr: n.addr(), Running: n.proc != nil}
		switch n.state {
		case nodeStarting:
			b.State = platform.BrokerStarting
		case nodeRunning:
			b.State = platform.BrokerRunning
		case nodeStopping:
			b.State = platform.BrokerStopping
		default:
			b.State = platform.BrokerStopped
		}
		out = append(out, b)
	}
	return out
}

// AddBroker starts a broker with a new id in rack (empty: the rack with the
// fewest registered brokers, ties by the order of Options.Racks) and returns
// its id once it is unfenced.
func (c *Cluster) AddBroker(ctx context.Context, rack string) (int32, error) {
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return 0, errors.New("kafkatest: cluster is stopped")
	}
	if rack == "" {
		rack = c.leastUsedRackLocked()
	}
	n := c.newBrokerLocked(port, rack)
	c.mu.Unlock()
	if err := c.launch(ctx, n); err != nil {
		_ = c.signal(context.Background(), n, syscall.SIGKILL)
		return n.id, fmt.Errorf("adding broker %d in rack %s: %w", n.id, rack, err)
	}
	c.opts.Logf("kafkatest: broker %d (rack %s, %s) added", n.id, rack, n.addr())
	return n.id, nil
}

func (c *Cluster) leastUsedRackLocked() string {
	count := map[string]int{}
	for _, n := range c.brokers {
		count[n.rack]++
	}
	best := c.opts.Racks[0]
	for _, r := range c.opts.Racks {
		if count[r] < count[best] {
			best = r
		}
	}
	return best
}

func (c *Cluster) broker(id int32) (*node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.brokers[id]
	if !ok {
		return nil, fmt.Errorf("kafkatest: cluster has no broker %d (brokers: %v)", id, c.idsLocked())
	}
	return n, nil
}

func (c *Cluster) idsLocked() []int32 {
	var ids []int32
	for _, n := range c.sortedBrokersLocked() {
		ids = append(ids, n.id)
	}
	return ids
}

// StopBroker shuts a broker down in order (SIGTERM: it hands its partition
// leaderships over first) and waits for its JVM to exit. If ctx ends first
// the broker is killed and the error says so. Stopping a stopped broker does
// nothing.
func (c *Cluster) StopBroker(ctx context.Context, id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	return c.signal(ctx, n, syscall.SIGTERM)
}

// KillBroker SIGKILLs a broker and waits for its JVM to exit. The controller
// fences it once its session times out (broker.session.timeout.ms).
func (c *Cluster) KillBroker(id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.signal(ctx, n, syscall.SIGKILL)
}

// RestartBroker stops the broker if it runs, starts it again with the same
// id, rack, port and data, and returns once it is unfenced.
//
// After a kill the controller refuses the new registration until the old
// one's session times out (broker.session.timeout.ms, 9 s by default); the
// broker retries by itself, so the restart takes at least that long.
func (c *Cluster) RestartBroker(ctx context.Context, id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	if err := c.signal(ctx, n, syscall.SIGTERM); err != nil {
		return err
	}
	if err := c.prepare(n); err != nil {
		return err
	}
	if err := c.startAndWait(ctx, n); err != nil {
		return fmt.Errorf("restarting broker %d: %w", id, err)
	}
	return nil
}

// UnregisterBroker removes a stopped broker's registration from the
// controller (a fenced registration never expires by itself) and deletes its
// data. It refuses while the broker's JVM runs, since a running broker would
// register again at once. It returns once DescribeCluster, fenced brokers
// included, no longer lists the broker.
func (c *Cluster) UnregisterBroker(ctx context.Context, id int32) error {
	n, err := c.broker(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	proc := n.proc
	c.mu.Unlock()
	if proc != nil {
		return fmt.Errorf("kafkatest: refusing to unregister broker %d while its JVM runs (pid %d); stop it first", id, proc.Pid)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	if err := unregisterBroker(ctx, c.client, id); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.brokers, id)
	c.mu.Unlock()
	if err := c.waitClusterView(ctx, nil, []int32{id}); err != nil {
		return err
	}
	if err := unmountUnder(n.dir); err != nil {
		return err
	}
	if err := os.RemoveAll(n.dir); err != nil {
		return fmt.Errorf("removing the data of unregistered broker %d: %w", id, err)
	}
	c.opts.Logf("kafkatest: broker %d unregistered", id)
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
		os.Remove(c.record)
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

// Scaler is a scaling platform made of the cluster itself: it stops the
// brokers asked to leave and starts new ones until the count is reached.
// Tests that drive the executor without the HTTP scaling API use it.
type Scaler struct{ C *Cluster }

// ScaleTo stops remove, then adds brokers until n are listed.
func (s Scaler) ScaleTo(ctx context.Context, n int, remove []int32) error {
	for _, id := range remove {
		if err := s.C.StopBroker(ctx, id); err != nil {
			return err
		}
	}
	for len(s.C.Brokers()) < n {
		if _, err := s.C.AddBroker(ctx, ""); err != nil {
			return err
		}
	}
	return nil
}
