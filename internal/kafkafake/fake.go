// Package kafkafake is a fake Kafka cluster for measuring the provider's
// read path at a scale no local cluster holds: hundreds of brokers and about
// a million partitions, one listener per broker on 127.0.0.1.
//
// It answers, at the wire level (kmsg), only what a refresh and a plan
// send: ApiVersions, Metadata, DescribeCluster, DescribeLogDirs,
// DescribeConfigs, ListOffsets and DescribeQuorum. It proves what reading such a cluster
// costs (requests, bytes, memory, time) and nothing else: it stores no
// records, moves no replica and changes nothing, so it says nothing about
// reassignment. Every other request closes the connection and is counted
// under "unanswered:" with its name, so a new request on the path shows.
//
// Why not franz-go's kfake: it answers DescribeLogDirs from every broker
// with every partition of the cluster (200 brokers times 933,000 entries
// per refresh, and sizes that belong to no broker), derives replicas from
// the leader alone, and keeps a partition's full state (batches, maps) for
// each of the million partitions.
//
// The cluster is computed, not stored: partition g of the Topics ×
// PartitionsPerTopic generated ones is in topic "t%05d" (g / PartitionsPerTopic),
// its replicas are brokers g, g+1, … (mod Brokers, ids from 1), and its
// size a hash of g. Brokers sit in Racks racks round-robin.
package kafkafake

import (
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"sync"
)

// Topic is a topic besides the generated ones, such as kafkascale's
// operations topic.
type Topic struct {
	Name       string
	Partitions int
	Internal   bool
}

// Config shapes the fake cluster.
type Config struct {
	ClusterID          string
	Brokers            int // ids 1..Brokers
	Racks              int // broker id i sits in rack "rack-<(i-1) % Racks>"; 0 means no racks
	Topics             int
	PartitionsPerTopic int
	ReplicationFactor  int
	// MaxPartitionBytes bounds a partition's size; sizes spread evenly
	// below it by a hash of the partition.
	MaxPartitionBytes int64
	// DiskBytes is each broker's log dir volume.
	DiskBytes int64
	Extra     []Topic
}

// Cluster is a running fake.
type Cluster struct {
	cfg       Config
	listeners []net.Listener
	addrs     []string
	// topics are every topic in order: generated, then Extra.
	topics  []topicInfo
	byName  map[string]int
	total   int // partitions
	wg      sync.WaitGroup
	mu      sync.Mutex
	counts  map[string]int
	conns   map[net.Conn]bool
	closed  bool
	mdCache map[int16][]byte // encoded all-topics Metadata bodies by version
	// dirCache holds encoded all-partitions DescribeLogDirs bodies by
	// broker and version.
	dirCache map[[2]int32][]byte
}

type topicInfo struct {
	name       string
	first      int // global index of partition 0
	partitions int
	internal   bool
}

// Start listens for every broker on a free port of 127.0.0.1.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Brokers < 1 || cfg.ReplicationFactor < 1 || cfg.ReplicationFactor > cfg.Brokers {
		return nil, fmt.Errorf("kafkafake: %d brokers cannot hold replication factor %d", cfg.Brokers, cfg.ReplicationFactor)
	}
	if cfg.ClusterID == "" {
		cfg.ClusterID = "kafkafake"
	}
	c := &Cluster{cfg: cfg, byName: map[string]int{}, counts: map[string]int{}, conns: map[net.Conn]bool{}, mdCache: map[int16][]byte{},
		dirCache: map[[2]int32][]byte{}}
	for t := 0; t < cfg.Topics; t++ {
		c.addTopic(fmt.Sprintf("t%05d", t), cfg.PartitionsPerTopic, false)
	}
	for _, t := range cfg.Extra {
		c.addTopic(t.Name, t.Partitions, t.Internal)
	}
	for b := 0; b < cfg.Brokers; b++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("kafkafake: listening for broker %d: %w", b+1, err)
		}
		c.listeners = append(c.listeners, l)
		c.addrs = append(c.addrs, l.Addr().String())
	}
	for i, l := range c.listeners {
		c.wg.Add(1)
		go c.accept(int32(i+1), l)
	}
	return c, nil
}

func (c *Cluster) addTopic(name string, partitions int, internal bool) {
	c.byName[name] = len(c.topics)
	c.topics = append(c.topics, topicInfo{name: name, first: c.total, partitions: partitions, internal: internal})
	c.total += partitions
}

// Addrs are the brokers' host:port, broker 1 first.
func (c *Cluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// ClusterID is the id the cluster reports.
func (c *Cluster) ClusterID() string { return c.cfg.ClusterID }

// Partitions counts every partition, extra topics included.
func (c *Cluster) Partitions() int { return c.total }

// Requests returns how many requests of each kind (Kafka's API name) the
// brokers received since the start or the last ResetRequests.
func (c *Cluster) Requests() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// ResetRequests zeroes the counts.
func (c *Cluster) ResetRequests() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
}

// FormatRequests prints counts as "Name n, Name n" by name.
func FormatRequests(counts map[string]int) string {
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	sort.Strings(names)
	s := ""
	for i, k := range names {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, counts[k])
	}
	return s
}

// Close stops every listener and connection and waits for them.
func (c *Cluster) Close() {
	c.mu.Lock()
	c.closed = true
	for conn := range c.conns {
		_ = conn.Close()
	}
	c.mu.Unlock()
	for _, l := range c.listeners {
		_ = l.Close()
	}
	c.wg.Wait()
}

// replicas appends partition g's replicas to dst.
func (c *Cluster) replicas(dst []int32, g int) []int32 {
	for k := 0; k < c.cfg.ReplicationFactor; k++ {
		dst = append(dst, int32((g+k)%c.cfg.Brokers)+1)
	}
	return dst
}

// size is partition g's size in bytes: generated partitions spread below
// MaxPartitionBytes; extra topics are empty.
func (c *Cluster) size(g int) int64 {
	if c.cfg.MaxPartitionBytes <= 0 || g >= c.cfg.Topics*c.cfg.PartitionsPerTopic {
		return 0
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(g)*0x9E3779B97F4A7C15)
	h := binary.LittleEndian.Uint64(b[:]) ^ (uint64(g) >> 7)
	h ^= h >> 31
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 29
	return int64(h % uint64(c.cfg.MaxPartitionBytes))
}

func (c *Cluster) rack(id int32) *string {
	if c.cfg.Racks <= 0 {
		return nil
	}
	r := fmt.Sprintf("rack-%d", (int(id)-1)%c.cfg.Racks)
	return &r
}

// topicOf returns the topic holding global partition g and g's index in it.
func (c *Cluster) topicOf(g int) (int, int32) {
	i := sort.Search(len(c.topics), func(i int) bool { return c.topics[i].first+c.topics[i].partitions > g })
	return i, int32(g - c.topics[i].first)
}
