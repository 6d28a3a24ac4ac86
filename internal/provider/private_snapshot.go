package provider

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// planningSnapshotKey holds, in the resource's private state, the cluster as
// the last refresh saw it, in one of two forms:
//
//   - the whole snapshot (brokers, disks, replicas and sizes) as a JSON
//     string of gzipped JSON, while that gzip is at most maxSnapshotGzipBytes.
//     The plan then computes its cost from it, so that `plan` and the plan
//     Terraform repeats inside `apply` agree to the byte;
//   - above that, only a planningSummary (a JSON object, under 100 bytes): a
//     cluster of 933,000 partitions made a 97 MB snapshot, written into the
//     state file at every refresh. The plan then reads the live cluster and
//     leaves planned_moves, planned_bytes, estimated_duration and
//     leaving_brokers unknown: known after apply, never a figure the apply
//     could contradict.
//
// A state written before the summary existed holds the whole snapshot
// whatever its size; it is read as before and replaced at the next refresh.
const planningSnapshotKey = "planning_snapshot"

// maxSnapshotGzipBytes bounds the whole snapshot kept in private state.
const maxSnapshotGzipBytes = 1 << 20

// planningSummary is what private state keeps of a cluster too large for
// the whole snapshot. Keys are short: it is written at every refresh.
type planningSummary struct {
	// Digest is a hash of every partition's assignment (topic, partition,
	// replicas in order), to tell whether the assignment changed.
	Digest     string `json:"d"`
	Brokers    int    `json:"b"`
	Partitions int    `json:"p"`
	Replicas   int    `json:"r"`
	// BalanceFor, when set, is the digest of the options (optionsDigest)
	// OutOfBalance was asked with at the refresh, and OutOfBalance its
	// answer: what a plan with keep_balanced compares when the count is
	// unchanged.
	BalanceFor   string `json:"bf,omitempty"`
	OutOfBalance bool   `json:"ob,omitempty"`
}

// planningView is what the plan has of the last refresh: the whole
// snapshot (Full), only its summary (Summary), or nothing (a new resource).
type planningView struct {
	Cluster engine.Cluster
	Full    bool
	Summary *planningSummary
}

type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// savePlanningSnapshot keeps c, or its summary when c is too large, in
// private state. balance, when set, are the options the resource keeps the
// cluster balanced with: a summary records OutOfBalance's answer for them.
func savePlanningSnapshot(ctx context.Context, p privateSetter, c engine.Cluster, balance *engine.Options) diag.Diagnostics {
	v, err := encodePlanningSnapshot(c, balance)
	if err != nil {
		return diag.Diagnostics{diag.NewErrorDiagnostic("Could not keep the planning snapshot",
			"While saving the cluster the last refresh saw into the private state: "+err.Error()+". "+bugReport)}
	}
	return p.SetKey(ctx, planningSnapshotKey, v)
}

// encodePlanningSnapshot returns the private-state value for c: the whole
// snapshot while it fits in maxSnapshotGzipBytes, its summary otherwise.
func encodePlanningSnapshot(c engine.Cluster, balance *engine.Options) ([]byte, error) {
	gz, err := gzipSnapshot(c, maxSnapshotGzipBytes)
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

var errSnapshotTooLarge = errors.New("snapshot larger than the private state keeps")

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
func summarize(c engine.Cluster) planningSummary {
	h := sha256.New()
	s := planningSummary{Brokers: len(c.Brokers), Partitions: len(c.Partitions)}
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

// loadPlanningSnapshot reads what the last refresh kept. Anything
// unreadable counts as nothing kept: the next refresh replaces it.
func loadPlanningSnapshot(ctx context.Context, p privateGetter) (planningView, diag.Diagnostics) {
	if p == nil {
		return planningView{}, nil
	}
	raw, diags := p.GetKey(ctx, planningSnapshotKey)
	if diags.HasError() || len(raw) == 0 {
		return planningView{}, diags
	}
	return decodePlanningSnapshot(raw), diags
}

func decodePlanningSnapshot(raw []byte) planningView {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var s planningSummary
		if json.Unmarshal(raw, &s) != nil || s.Digest == "" {
			return planningView{}
		}
		return planningView{Summary: &s}
	}
	var gz []byte
	if err := json.Unmarshal(raw, &gz); err != nil {
		return planningView{}
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return planningView{}
	}
	var c engine.Cluster
	if err := json.NewDecoder(zr).Decode(&c); err != nil {
		return planningView{}
	}
	// The end of the gzip, where its checksum is checked: anything else
	// there is a truncated or corrupt snapshot.
	if _, err := io.CopyN(io.Discard, zr, 1); err != io.EOF {
		return planningView{}
	}
	return planningView{Cluster: c, Full: true}
}

// outOfBalance says whether the cluster the last refresh saw is out of
// balance under o. known is false when the view cannot tell: nothing kept,
// or a summary whose answer was given for other options.
func (v planningView) outOfBalance(o engine.Options) (out, known bool, err error) {
	switch {
	case v.Full:
		reasons, _, err := engine.OutOfBalance(v.Cluster, o)
		return len(reasons) > 0, err == nil, err
	case v.Summary != nil && v.Summary.BalanceFor != "" && v.Summary.BalanceFor == optionsDigest(o):
		return v.Summary.OutOfBalance, true, nil
	default:
		return false, false, nil
	}
}
