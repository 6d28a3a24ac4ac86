package provider

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// planningSnapshotKey holds, in the resource's private state, the cluster as
// the last refresh saw it: brokers, disks, replicas and sizes, gzipped JSON.
const planningSnapshotKey = "planning_snapshot"

type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

func savePlanningSnapshot(ctx context.Context, p privateSetter, c engine.Cluster) diag.Diagnostics {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(c); err != nil {
		return diag.Diagnostics{diag.NewErrorDiagnostic("Could not keep the planning snapshot", err.Error()+" "+bugReport)}
	}
	if err := zw.Close(); err != nil {
		return diag.Diagnostics{diag.NewErrorDiagnostic("Could not keep the planning snapshot", err.Error()+" "+bugReport)}
	}
	// Private state values must be JSON: a JSON string of base64.
	v, _ := json.Marshal(buf.Bytes())
	return p.SetKey(ctx, planningSnapshotKey, v)
}

func loadPlanningSnapshot(ctx context.Context, p privateGetter) (engine.Cluster, bool, diag.Diagnostics) {
	var c engine.Cluster
	if p == nil {
		return c, false, nil
	}
	raw, diags := p.GetKey(ctx, planningSnapshotKey)
	if diags.HasError() || len(raw) == 0 {
		return c, false, diags
	}
	var gz []byte
	if err := json.Unmarshal(raw, &gz); err != nil {
		return c, false, nil // an unreadable snapshot is replaced at the next refresh
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return c, false, nil
	}
	b, err := io.ReadAll(zr)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return engine.Cluster{}, false, nil
	}
	return c, true, nil
}
