package provider

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/metrics"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// Plan-time checks of the outside systems a change will use: the scaling
// API, the programs of command and quiesce, Prometheus. Each is cheap and
// bounded, skips a value not known yet, and refuses only on a definite
// answer (a 404 for the cluster id, a program that is not there, a 200
// that is not Prometheus): a timeout or a refused connection at plan time
// says nothing about the apply, so it is only logged.

// planCheckTimeout bounds one plan-time call to an outside system.
const planCheckTimeout = 5 * time.Second

// checkScalingAPI asks the scaling API for the cluster, once, and refuses
// a plan whose cluster_id it answers 404 for.
func checkScalingAPI(ctx context.Context, h *httpScalingModel, diags *diag.Diagnostics) {
	if h == nil || !knownString(h.Endpoint) || !knownString(h.ClusterID) || h.Token.IsUnknown() || h.TokenWO.IsUnknown() {
		return
	}
	cl, err := platform.NewHTTPClient(platform.HTTPConfig{
		Endpoint:   h.Endpoint.ValueString(),
		ClusterID:  h.ClusterID.ValueString(),
		Token:      platform.ResolveToken(scalingToken(h)),
		Timeout:    planCheckTimeout,
		MaxRetries: -1,
		Logger:     tflogFunc,
	})
	if err != nil {
		return // buildScaler reports it
	}
	ctx, cancel := context.WithTimeout(ctx, planCheckTimeout)
	defer cancel()
	_, err = cl.GetCluster(ctx)
	switch {
	case err == nil:
	case platform.IsNotFound(err):
		diags.AddAttributeError(path.Root("scaling").AtName("http").AtName("cluster_id"), "Unknown cluster_id",
			fmt.Sprintf("While attempting to read cluster %q from the scaling API, the scaling API at %s answered 404 for "+
				"cluster %q: it knows no cluster by this id, so it could not add or remove a broker. Nothing was changed.\n\n"+
				"Set cluster_id to the platform's id of this cluster (and check that endpoint is the API's base URL).\n\n%v",
				cl.ClusterID(), cl.Endpoint(), cl.ClusterID(), err))
	default:
		tflog.Warn(ctx, "could not check the scaling API at plan time; the apply will", map[string]any{"error": err.Error()})
	}
}

// checkCommand refuses an argv whose program is not on PATH (or, with a
// slash, not an executable file) on the machine that runs Terraform.
func checkCommand(ctx context.Context, argv types.List, at path.Path, what string, diags *diag.Diagnostics) {
	if argv.IsNull() || argv.IsUnknown() || len(argv.Elements()) == 0 {
		return
	}
	first, ok := argv.Elements()[0].(types.String)
	if !ok || !knownString(first) {
		return
	}
	program := first.ValueString()
	if _, err := exec.LookPath(program); err != nil {
		where := "is not on PATH on this machine"
		if strings.Contains(program, "/") {
			where = "is not an executable file on this machine"
		}
		tflog.Debug(ctx, "command not found at plan time", map[string]any{"program": program, "error": err.Error()})
		diags.AddAttributeError(at, "Command not found",
			fmt.Sprintf("While attempting to check the %s command, its program %q %s, so kafkascale could not run it: "+
				"the apply would fail halfway. Nothing was changed.\n\nInstall it where Terraform runs, or give its full path.\n\n%v",
				what, program, where, err))
	}
}

// checkPrometheus sends one query to prometheus_url and refuses a server
// that answers 200 with something other than Prometheus' query API.
func checkPrometheus(ctx context.Context, m *metricsModel, diags *diag.Diagnostics) {
	if m == nil || !knownString(m.PrometheusURL) || m.BearerToken.IsUnknown() || m.BearerTokenWO.IsUnknown() || m.CACert.IsUnknown() ||
		(m.BasicAuth != nil && (m.BasicAuth.Username.IsUnknown() || m.BasicAuth.Password.IsUnknown() || m.BasicAuth.PasswordWO.IsUnknown())) {
		return
	}
	err := metrics.Probe(ctx, metricsConfig(m))
	var notProm *metrics.NotPrometheusError
	switch {
	case err == nil:
	case errors.As(err, &notProm):
		diags.AddAttributeError(path.Root("rebalance").AtName("metrics").AtName("prometheus_url"), "Not a Prometheus server",
			fmt.Sprintf("While attempting to query Prometheus at %s, the server did not answer as Prometheus' query API: "+
				"without broker metrics the dynamic throttle could not react to the brokers' load. Nothing was changed.\n\n"+
				"Set prometheus_url to Prometheus' base URL, the one whose /api/v1/query answers (not a Grafana or a page "+
				"before it), or remove the metrics block to keep the throttle fixed.\n\n%v", m.PrometheusURL.ValueString(), err))
	default:
		tflog.Warn(ctx, "could not check Prometheus at plan time; the apply will", map[string]any{"error": err.Error()})
	}
}

func knownString(v types.String) bool { return !v.IsNull() && !v.IsUnknown() && v.ValueString() != "" }
