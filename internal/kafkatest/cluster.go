package kafkatest

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
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
	// controller, 3 for three, which survive losing one. Either way the
	// quorum is static (controller.quorum.voters).
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
	// KafkaVersion is the Apache Kafka release to run (default
	// KafkaVersion, 4.4). KafkaVersion39 runs Kafka 3.9 in KRaft mode, as
	// the provider's compatibility subset does; the settings that only
	// Kafka 4 knows (the streams and share group coordinators) are left out
	// of its node.properties.
	KafkaVersion string
	// DiskBytes, when set, puts each broker's log.dirs on its own tmpfs of
	// this size (brokers added later too), so that a disk can really fill
	// up; see DiskUse. Mounting needs root. The disks are unmounted on Stop,
	// so their data goes even with KeepDir.
	DiskBytes int64
	// Tiered, when set, turns on tiered storage (KIP-405) on every broker,
	// with a remote storage manager that keeps the tiered segments under
	// Dir; see TieredOptions.
	Tiered *TieredOptions

	// formatEach runs Kafka's storage formatter for every controller, as
	// without a bootstrap metadata template: for the test that compares
	// the two.
	formatEach bool
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
	if o.KafkaVersion == "" {
		o.KafkaVersion = KafkaVersion
	}
	if err := validVersion(o.KafkaVersion); err != nil {
		return o, err
	}
	var err error
	if o.Tiered, err = o.Tiered.withDefaults(o.KafkaVersion); err != nil {
		return o, err
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
	rsmJar    string      // the remote storage manager's jar, with Options.Tiered
	cds       cdsArchives // archives to start from
	cdsDump   cdsArchives // archives to write on exit (training only)
	// bootstrap is the controllers' bootstrap metadata template (Kafka 4
	// without Security), or "": they run the formatter.
	bootstrap string
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
	// began is when Start was called; cpu is the processor time (user
	// and system) of the cluster's JVMs that have exited, summed from their
	// rusage, which Stop logs: what a test costs the machine beside its
	// wall time.
	began time.Time
	cpu   time.Duration

	reaper *os.File
	record string

	secure *secureState // nil unless Options.Security
}

// ClusterID is Kafka's cluster id (the one the storage was formatted with).
func (c *Cluster) ClusterID() string { return c.clusterID }

// KafkaVersion is the Apache Kafka release the cluster runs.
func (c *Cluster) KafkaVersion() string { return c.opts.KafkaVersion }

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
