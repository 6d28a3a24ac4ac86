package provider

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// operationLeaseModel is the provider's operation_lease block. The setting
// is the provider's, not a resource's: the lease is one per cluster, and a
// provider block is one cluster; whether a run may wait for another run is
// a property of the run (a CI job that must not queue behind a colleague's
// apply), and two resources of one run disagreeing on it would make no sense.
type operationLeaseModel struct {
	FailFast    types.Bool   `tfsdk:"fail_fast"`
	ExpireAfter types.String `tfsdk:"expire_after"`
}

func operationLeaseBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "The cluster-wide operation lease. Every change that moves data or places replicas (a change of " +
			"`broker_count`, a change of `replication_factor`, new partitions of a topic or of a Streams app's topics) holds it " +
			"while it runs, so that two operations never overlap on one cluster, even from two Terraform working directories. " +
			"The lease lives in the `" + kafka.LeaseTopic + "` topic. By default an operation waits for the holder, within its " +
			"own timeout, and logs who it waits for.",
		Attributes: map[string]schema.Attribute{
			"fail_fast": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Fail at once, naming the holder, when another Terraform run holds the lease, instead of " +
					"waiting for it. Operations of the same run still wait for each other: Terraform applies independent resources " +
					"in parallel. Default `false`.",
			},
			"expire_after": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("How long after its last heartbeat a holder's lease expires, as a Go duration, "+
					"between `%s` and `%s`. A holder heartbeats five times in this period; one that dies (killed, machine lost) "+
					"stops, and the next apply takes over after this long. An apply that resumes the same interrupted operation "+
					"takes over at once. Default `%s`.", executor.MinLeaseExpireAfter, executor.MaxLeaseExpireAfter, executor.DefaultLeaseExpireAfter),
				Validators: durationValidators(executor.MinLeaseExpireAfter, executor.MaxLeaseExpireAfter, explainLeaseExpireAfter),
			},
		},
	}
}

// newLessee builds the lease taker of one provider configuration: its
// session is this configuration, so all operations of one run share it.
func newLessee(kc *kafka.Client, m *operationLeaseModel) *executor.Lessee {
	host, _ := os.Hostname()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	l := &executor.Lessee{
		Records: kc.LeaseLog(),
		Host:    host,
		PID:     os.Getpid(),
		Session: hex.EncodeToString(b),
		Log:     tflogLogger{},
	}
	if m != nil {
		l.FailFast = m.FailFast.ValueBool()
		if v := m.ExpireAfter.ValueString(); v != "" {
			l.ExpireAfter, _ = time.ParseDuration(v) // validated by the schema
		}
	}
	return l
}

// leaseDiagnostic explains a failure to get or keep the operation lease,
// on the attribute whose change asked for the operation (none when empty),
// or reports false when err is no lease failure.
func leaseDiagnostic(attempt string, at path.Path, err error) (diag.Diagnostic, bool) {
	d, ok := leaseDiagnosticOf(attempt, err)
	if !ok || at.Equal(path.Empty()) {
		return d, ok
	}
	return diag.NewAttributeErrorDiagnostic(at, d.Summary(), d.Detail()), true
}

func leaseDiagnosticOf(attempt string, err error) (diag.Diagnostic, bool) {
	var busy *executor.LeaseBusyError
	var wait *executor.LeaseWaitError
	var lost *executor.LeaseLostError
	switch {
	case errors.As(err, &busy):
		return diag.NewErrorDiagnostic("Another operation holds the cluster",
			fmt.Sprintf("While attempting to %s, another Terraform run held the cluster's operation lease: %v.\n\n"+
				"Nothing was changed. operation_lease.fail_fast is set in the provider, so this apply did not wait. Apply again "+
				"once that operation is done, or unset fail_fast to wait for it.", attempt, busy)), true
	case errors.As(err, &wait):
		return diag.NewErrorDiagnostic("Timed out waiting for another operation",
			fmt.Sprintf("While attempting to %s, the apply waited for the cluster's operation lease until it was "+
				"interrupted or its timeout passed: %v.\n\nNothing was changed. Apply again once that operation is done, or "+
				"raise the resource's timeouts.", attempt, wait)), true
	case errors.As(err, &lost):
		return diag.NewErrorDiagnostic("Operation lease lost",
			fmt.Sprintf("While attempting to %s, this apply stopped holding the cluster's operation lease, so it stopped "+
				"changing the cluster: %v.\n\nIts progress is saved; the next apply resumes it. If the brokers were unreachable, "+
				"raise operation_lease.expire_after.", attempt, lost)), true
	}
	return nil, false
}
