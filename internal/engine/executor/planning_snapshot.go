package executor

// The planning snapshot: what a resource keeps of the cluster its last
// refresh saw, so that a plan, and the same plan made again inside the
// apply, compute the same cost (CostRequest.Planned). Two forms:
//
//   - the whole snapshot (brokers, disks, replicas and sizes) as a JSON
//     string of gzipped JSON, while that gzip is at most
//     MaxSnapshotGzipBytes;
//   - above that, only a PlanningSummary (a JSON object, under 100 bytes):
//     a cluster of 933,000 partitions made a 97 MB snapshot, written at
//     every refresh. The plan then reads the live cluster, and its figures
//     are known only after the apply.
//
// A value written before the summary existed holds the whole snapshot
// whatever its size; it is read as before.

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// MaxSnapshotGzipBytes bounds the whole snapshot kept.
const MaxSnapshotGzipBytes = 1 << 20

// PlanningSummary is what is kept of a cluster too large for the whole
// snapshot. Keys are short: it is written at every refresh.
type PlanningSummary struct {
	// Digest is a hash of every partition's assignment (topic, partition,
	// replicas in order), to tell whether the assignment changed.
	Digest     string `json:"d"`
	Brokers    int    `json:"b"`
	Partitions int    `json:"p"`
	Replicas   int    `json:"r"`
	// BalanceFor, when set, is the digest of the options (optionsDigest)
	// OutOfBalance was asked with at the refresh, and OutOfBalance its
	// answer: what the plan of a cluster kept balanced compares when the
	// count is unchanged.
	BalanceFor   string `json:"bf,omitempty"`
	OutOfBalance bool   `json:"ob,omitempty"`
}

// PlanningView is what the plan has of the last refresh: the whole
// snapshot (Full), only its summary (Summary), or nothing (a new resource).
type PlanningView struct {
	Cluster engine.Cluster
	Full    bool
	Summary *PlanningSummary
}

// EncodePlanningSnapshot returns the value kept for c: the whole
// snapshot while it fits in MaxSnapshotGzipBytes, its summary otherwise.
func EncodePlanningSnapshot(c engine.Cluster, balance *engine.Options) ([]byte, error) {
	gz, err := gzipSnapshot(c, MaxSnapshotGzipBytes)
	if err == nil {
		// Private state values must be JSON: a JSON string of base64.
		return json.Marshal(gz)
	}
	if !errors.Is(err, errSnapshotTooLarge) {
		return nil, err
	}
	s := summarize(c)
	if balance != nil {
		reasons, _, err := engine.OutOfBalance(c, *balance)
		if err == nil {
			// An error leaves BalanceFor empty: the plan cannot say, as
			// without a snapshot, and reports the error from the live read.
			s.BalanceFor, s.OutOfBalance = optionsDigest(*balance), len(reasons) > 0
		}
	}
	return json.Marshal(s)
}

var errSnapshotTooLarge = errors.New("snapshot larger than a planning snapshot keeps")

// limitWriter fails once more than n bytes are written to it.
type limitWriter struct {
	buf bytes.Buffer
	n   int
}

func (w *limitWriter) Write(b []byte) (int, error) {
	if w.buf.Len()+len(b) > w.n {
		return 0, errSnapshotTooLarge
	}
	return w.buf.Write(b)
}

// gzipSnapshot encodes c as gzipped JSON, partition by partition, and stops
// with errSnapshotTooLarge as soon as the gzip passes limit: a large
// cluster costs the encoding of the first megabyte only.
func gzipSnapshot(c engine.Cluster, limit int) ([]byte, error) {
	w := &limitWriter{n: limit}
	zw := gzip.NewWriter(w)
	write := func(b []byte, err error) error {
		if err != nil {
			return err
		}
		_, err = zw.Write(b)
		return err
	}
	brokers := c.Brokers
	if brokers == nil {
		brokers = []engine.Broker{}
	}
	if err := write([]byte(`{"brokers":`), nil); err != nil {
		return nil, err
	}
	if err := write(json.Marshal(brokers)); err != nil {
		return nil, err
	}
	if c.Partitions == nil {
		if err := write([]byte(`,"partitions":null}`), nil); err != nil {
			return nil, err
		}
	} else {
		if err := write([]byte(`,"partitions":[`), nil); err != nil {
			return nil, err
		}
		for i := range c.Partitions {
			if i > 0 {
				if err := write([]byte{','}, nil); err != nil {
					return nil, err
				}
			}
			if err := write(json.Marshal(&c.Partitions[i])); err != nil {
				return nil, err
			}
		}
		if err := write([]byte(`]}`), nil); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

// summarize counts c and hashes its assignment.
func summarize(c engine.Cluster) PlanningSummary {
	h := sha256.New()
	s := PlanningSummary{Brokers: len(c.Brokers), Partitions: len(c.Partitions)}
	var scratch []byte
	for _, p := range c.Partitions {
		scratch = append(scratch[:0], p.Topic...)
		scratch = append(scratch, 0)
		scratch = binary.BigEndian.AppendUint32(scratch, uint32(p.Partition))
		scratch = binary.BigEndian.AppendUint32(scratch, uint32(len(p.Replicas)))
		for _, r := range p.Replicas {
			scratch = binary.BigEndian.AppendUint32(scratch, uint32(r))
		}
		h.Write(scratch)
		s.Replicas += len(p.Replicas)
	}
	s.Digest = hex.EncodeToString(h.Sum(nil)[:8])
	return s
}

// optionsDigest names a set of planning options in a summary.
func optionsDigest(o engine.Options) string {
	b, _ := json.Marshal(o)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}

// DecodePlanningSnapshot reads a value EncodePlanningSnapshot wrote.
// Anything unreadable counts as nothing kept.
func DecodePlanningSnapshot(raw []byte) PlanningView {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var s PlanningSummary
		if json.Unmarshal(raw, &s) != nil || s.Digest == "" {
			return PlanningView{}
		}
		return PlanningView{Summary: &s}
	}
	var gz []byte
	if err := json.Unmarshal(raw, &gz); err != nil {
		return PlanningView{}
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return PlanningView{}
	}
	var c engine.Cluster
	if err := json.NewDecoder(zr).Decode(&c); err != nil {
		return PlanningView{}
	}
	// The end of the gzip, where its checksum is checked: anything else
	// there is a truncated or corrupt snapshot.
	if _, err := io.CopyN(io.Discard, zr, 1); err != io.EOF {
		return PlanningView{}
	}
	return PlanningView{Cluster: c, Full: true}
}

// OutOfBalance says whether the cluster the last refresh saw is out of
// the balance b keeps under o. known is false when the view cannot tell:
// nothing kept, or a summary whose answer was given for other options or
// for another balance (a summary records BalanceAll's).
func (v PlanningView) OutOfBalance(o engine.Options, b Balance) (out, known bool, err error) {
	switch {
	case v.Full:
		// Out of balance is what a rebalance would act on: an imbalance
		// no allowed move reduces plans no change (PreviewRebalance).
		pv, err := PreviewRebalance(v.Cluster, o, b)
		if err != nil {
			return false, false, err
		}
		return pv.Imbalance != "", true, nil
	case b == BalanceAll && v.Summary != nil && v.Summary.BalanceFor != "" && v.Summary.BalanceFor == optionsDigest(o):
		return v.Summary.OutOfBalance, true, nil
	default:
		return false, false, nil
	}
}
