package kafkafake

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handled are the requests the fake answers, at every version kmsg knows.
var handled = []int16{
	(&kmsg.ApiVersionsRequest{}).Key(),
	(&kmsg.MetadataRequest{}).Key(),
	(&kmsg.DescribeClusterRequest{}).Key(),
	(&kmsg.DescribeLogDirsRequest{}).Key(),
	(&kmsg.DescribeConfigsRequest{}).Key(),
	(&kmsg.ListOffsetsRequest{}).Key(),
	(&kmsg.DescribeQuorumRequest{}).Key(),
	(&kmsg.ListPartitionReassignmentsRequest{}).Key(),
}

func isHandled(key int16) bool {
	for _, k := range handled {
		if k == key {
			return true
		}
	}
	return false
}

func (c *Cluster) accept(id int32, l net.Listener) {
	defer c.wg.Done()
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			_ = conn.Close()
			return
		}
		c.conns[conn] = true
		c.mu.Unlock()
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.serve(id, conn)
			c.mu.Lock()
			delete(c.conns, conn)
			c.mu.Unlock()
			_ = conn.Close()
		}()
	}
}

// serve answers one connection's requests in order.
func (c *Cluster) serve(id int32, conn net.Conn) {
	r := bufio.NewReaderSize(conn, 64<<10)
	w := bufio.NewWriterSize(conn, 64<<10)
	var size [4]byte
	var out []byte
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 100<<20 {
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		key, version, corr, body, err := parseHeader(buf)
		if err != nil {
			return
		}
		c.count(key)
		resp, err := c.answer(id, key, version, body)
		if err != nil {
			return
		}
		out = out[:0]
		out = append(out, 0, 0, 0, 0)
		out = binary.BigEndian.AppendUint32(out, uint32(corr))
		// ApiVersions answers with response header v0 at every version.
		if flexibleResponse(key, version) && key != 18 {
			out = append(out, 0) // no tagged fields
		}
		out = append(out, resp...)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := w.Write(out); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

func (c *Cluster) count(key int16) {
	name := kmsg.NameForKey(key)
	if !isHandled(key) {
		name = "unanswered:" + name
	}
	c.mu.Lock()
	c.counts[name]++
	c.mu.Unlock()
}

func flexibleResponse(key, version int16) bool {
	r := kmsg.ResponseForKey(key)
	if r == nil {
		return false
	}
	r.SetVersion(version)
	return r.IsFlexible()
}

// parseHeader splits a request into its header fields and body.
func parseHeader(b []byte) (key, version int16, corr int32, body []byte, err error) {
	if len(b) < 10 {
		return 0, 0, 0, nil, errors.New("short request")
	}
	key = int16(binary.BigEndian.Uint16(b))
	version = int16(binary.BigEndian.Uint16(b[2:]))
	corr = int32(binary.BigEndian.Uint32(b[4:]))
	idLen := int16(binary.BigEndian.Uint16(b[8:]))
	off := 10
	if idLen > 0 {
		off += int(idLen)
	}
	if off > len(b) {
		return 0, 0, 0, nil, errors.New("short client id")
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return key, version, corr, b[off:], nil
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		// Request header v2: tagged fields follow the client id.
		n, m := binary.Uvarint(b[off:])
		if m <= 0 {
			return 0, 0, 0, nil, errors.New("bad header tags")
		}
		off += m
		for i := uint64(0); i < n; i++ {
			_, m1 := binary.Uvarint(b[off:])
			if m1 <= 0 {
				return 0, 0, 0, nil, errors.New("bad header tag")
			}
			off += m1
			l, m2 := binary.Uvarint(b[off:])
			if m2 <= 0 || off+m2+int(l) > len(b) {
				return 0, 0, 0, nil, errors.New("bad header tag")
			}
			off += m2 + int(l)
		}
	}
	return key, version, corr, b[off:], nil
}

// answer returns the encoded response body, or an error that closes the
// connection (a request the fake does not answer).
func (c *Cluster) answer(id int32, key, version int16, body []byte) ([]byte, error) {
	if key == 18 {
		return c.apiVersions(version), nil
	}
	req := kmsg.RequestForKey(key)
	if req == nil || !isHandled(key) || version > req.MaxVersion() {
		return nil, fmt.Errorf("unanswered %s v%d", kmsg.NameForKey(key), version)
	}
	req.SetVersion(version)
	if err := req.ReadFrom(body); err != nil {
		return nil, err
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		if r.Topics == nil {
			return c.allMetadata(version), nil
		}
		resp = c.metadata(r)
	case *kmsg.DescribeClusterRequest:
		resp = c.describeCluster()
	case *kmsg.DescribeLogDirsRequest:
		if r.Topics == nil {
			return c.allLogDirs(id, version), nil
		}
		resp = c.describeLogDirs(id, r)
	case *kmsg.DescribeConfigsRequest:
		resp = c.describeConfigs(r)
	case *kmsg.ListOffsetsRequest:
		resp = c.listOffsets(r)
	case *kmsg.DescribeQuorumRequest:
		resp = c.describeQuorum(r)
	case *kmsg.ListPartitionReassignmentsRequest:
		// The fake cluster never moves a replica: nothing is in progress.
		resp = kmsg.NewPtrListPartitionReassignmentsResponse()
	default:
		return nil, fmt.Errorf("unanswered %s", kmsg.NameForKey(key))
	}
	resp.SetVersion(version)
	return resp.AppendTo(nil), nil
}

func (c *Cluster) apiVersions(version int16) []byte {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, k := range handled {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion, ak.MaxVersion = k, 0, kmsg.RequestForKey(k).MaxVersion()
		resp.ApiKeys = append(resp.ApiKeys, ak)
	}
	if version > resp.MaxVersion() {
		// Kafka answers an unknown version with v0 and the versions it has.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		version = 0
	}
	resp.SetVersion(version)
	return resp.AppendTo(nil)
}

func (c *Cluster) brokers() []kmsg.MetadataResponseBroker {
	out := make([]kmsg.MetadataResponseBroker, 0, len(c.addrs))
	for i, a := range c.addrs {
		host, port, _ := net.SplitHostPort(a)
		var p int32
		_, _ = fmt.Sscan(port, &p)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port, b.Rack = int32(i+1), host, p, c.rack(int32(i+1))
		out = append(out, b)
	}
	return out
}

func (c *Cluster) topicID(t int) [16]byte {
	var id [16]byte
	copy(id[:], "kafkafake")
	binary.BigEndian.PutUint32(id[12:], uint32(t+1))
	return id
}

func (c *Cluster) metadataTopic(t int) kmsg.MetadataResponseTopic {
	ti := c.topics[t]
	mt := kmsg.NewMetadataResponseTopic()
	name := ti.name
	mt.Topic, mt.TopicID, mt.IsInternal = &name, c.topicID(t), ti.internal
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, ti.partitions)
	reps := make([]int32, 0, ti.partitions*c.cfg.ReplicationFactor)
	for p := range mt.Partitions {
		start := len(reps)
		reps = c.replicas(reps, ti.first+p)
		r := reps[start:len(reps):len(reps)]
		mp := &mt.Partitions[p]
		*mp = kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.Replicas, mp.ISR = int32(p), r[0], r, r
	}
	return mt
}

func (c *Cluster) metadataResponse() *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	id := c.cfg.ClusterID
	resp.Brokers, resp.ClusterID, resp.ControllerID = c.brokers(), &id, 1
	return resp
}

// allMetadata is every topic, encoded once per version: at a million
// partitions the answer is tens of megabytes.
func (c *Cluster) allMetadata(version int16) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.mdCache[version]; ok {
		return b
	}
	resp := c.metadataResponse()
	resp.Topics = make([]kmsg.MetadataResponseTopic, 0, len(c.topics))
	for t := range c.topics {
		resp.Topics = append(resp.Topics, c.metadataTopic(t))
	}
	resp.SetVersion(version)
	b := resp.AppendTo(nil)
	c.mdCache[version] = b
	return b
}

// allLogDirs is a broker's every replica, encoded once per version, so
// that the fake's own work weighs little beside the client's.
func (c *Cluster) allLogDirs(id int32, version int16) []byte {
	key := [2]int32{id, int32(version)}
	c.mu.Lock()
	b, ok := c.dirCache[key]
	c.mu.Unlock()
	if ok {
		return b
	}
	resp := c.describeLogDirs(id, kmsg.NewPtrDescribeLogDirsRequest())
	resp.SetVersion(version)
	b = resp.AppendTo(nil)
	c.mu.Lock()
	c.dirCache[key] = b
	c.mu.Unlock()
	return b
}

// Warm encodes the answers to every broker's full Metadata and
// DescribeLogDirs at the versions kmsg knows best, so that a measured read
// finds them ready.
func (c *Cluster) Warm() {
	c.allMetadata((&kmsg.MetadataRequest{}).MaxVersion())
	for id := int32(1); id <= int32(c.cfg.Brokers); id++ {
		c.allLogDirs(id, (&kmsg.DescribeLogDirsRequest{}).MaxVersion())
	}
}

func (c *Cluster) metadata(r *kmsg.MetadataRequest) kmsg.Response {
	resp := c.metadataResponse()
	for _, rt := range r.Topics {
		t, ok := -1, false
		if rt.Topic != nil {
			t, ok = c.byName[*rt.Topic]
		} else if rt.TopicID != [16]byte{} {
			n := int(binary.BigEndian.Uint32(rt.TopicID[12:])) - 1
			if ok = n >= 0 && n < len(c.topics) && c.topicID(n) == rt.TopicID; ok {
				t = n
			}
		}
		if !ok {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID, mt.ErrorCode = rt.Topic, rt.TopicID, kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, c.metadataTopic(t))
	}
	return resp
}

func (c *Cluster) describeCluster() kmsg.Response {
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.ClusterID, resp.ControllerID = c.cfg.ClusterID, 1
	for _, b := range c.brokers() {
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack = b.NodeID, b.Host, b.Port, b.Rack
		resp.Brokers = append(resp.Brokers, db)
	}
	return resp
}

// describeLogDirs answers for broker id: one log dir holding the replicas
// the broker hosts, every one when the request names no topic.
func (c *Cluster) describeLogDirs(id int32, r *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = fmt.Sprintf("/kafkafake/broker-%d", id)
	var want map[int]map[int32]bool
	if r.Topics != nil {
		want = map[int]map[int32]bool{}
		for _, t := range r.Topics {
			if i, ok := c.byName[t.Topic]; ok {
				ps := map[int32]bool{}
				for _, p := range t.Partitions {
					ps[p] = true
				}
				want[i] = ps
			}
		}
	}
	// The broker hosts partition g when (g - (id-1)) mod Brokers is below
	// the replication factor: every Brokers-th partition from id-1-k.
	var gs []int
	for k := 0; k < c.cfg.ReplicationFactor; k++ {
		start := ((int(id)-1-k)%c.cfg.Brokers + c.cfg.Brokers) % c.cfg.Brokers
		for g := start; g < c.total; g += c.cfg.Brokers {
			gs = append(gs, g)
		}
	}
	slices.Sort(gs)
	var used int64
	byTopic := map[int]int{} // topic -> index in dir.Topics
	for _, g := range gs {
		t, p := c.topicOf(g)
		if want != nil && !want[t][p] {
			continue
		}
		i, ok := byTopic[t]
		if !ok {
			i = len(dir.Topics)
			byTopic[t] = i
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = c.topics[t].name
			dir.Topics = append(dir.Topics, dt)
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size = p, c.size(g)
		used += dp.Size
		dir.Topics[i].Partitions = append(dir.Topics[i].Partitions, dp)
	}
	if want == nil {
		dir.TotalBytes, dir.UsableBytes = c.cfg.DiskBytes, max(c.cfg.DiskBytes-used, 0)
	} else {
		// Kafka reports the volume's figures whatever the request names;
		// the fake only knows them for a full answer.
		dir.TotalBytes, dir.UsableBytes = c.cfg.DiskBytes, max(c.cfg.DiskBytes-c.used(id), 0)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}

func (c *Cluster) used(id int32) int64 {
	var used int64
	for k := 0; k < c.cfg.ReplicationFactor; k++ {
		start := ((int(id)-1-k)%c.cfg.Brokers + c.cfg.Brokers) % c.cfg.Brokers
		for g := start; g < c.total; g += c.cfg.Brokers {
			used += c.size(g)
		}
	}
	return used
}

func (c *Cluster) describeConfigs(r *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	for _, rr := range r.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		if rr.ResourceType == kmsg.ConfigResourceTypeTopic {
			if _, ok := c.byName[rr.ResourceName]; !ok {
				res.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
		}
		resp.Resources = append(resp.Resources, res)
	}
	return resp
}

// listOffsets answers every partition with offset 0: the fake holds no
// records.
func (c *Cluster) listOffsets(r *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrListOffsetsResponse()
	for _, rt := range r.Topics {
		t, ok := c.byName[rt.Topic]
		lt := kmsg.NewListOffsetsResponseTopic()
		lt.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			lp := kmsg.NewListOffsetsResponseTopicPartition()
			lp.Partition, lp.Timestamp, lp.Offset = rp.Partition, -1, 0
			if !ok || rp.Partition < 0 || int(rp.Partition) >= c.topics[t].partitions {
				lp.ErrorCode, lp.Offset = kerr.UnknownTopicOrPartition.Code, -1
			}
			lt.Partitions = append(lt.Partitions, lp)
		}
		resp.Topics = append(resp.Topics, lt)
	}
	return resp
}

// describeQuorum names broker 1 the metadata quorum's leader: the fake has
// no controllers of its own.
func (c *Cluster) describeQuorum(r *kmsg.DescribeQuorumRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	for _, rt := range r.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition, p.LeaderID, p.LeaderEpoch = rp.Partition, 1, 1
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
