package provider

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func (r *ClusterResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		// None at all is explained by ValidateConfig.
		resourcevalidator.Conflicting(
			path.MatchRoot("scaling").AtName("http"),
			path.MatchRoot("scaling").AtName("command"),
			path.MatchRoot("scaling").AtName("external"),
		),
	}
}

// ValidateConfig checks what single-attribute validators cannot: the
// throttle bounds against each other, and what each scaling method needs.
func (r *ClusterResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var cfg clusterResourceModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if rb := cfg.Rebalance; rb != nil {
		minT, maxT, initT := int64OrNull(rb.MinThrottle, defaultMinThrottle), int64OrNull(rb.MaxThrottle, defaultMaxThrottle), int64OrNull(rb.InitialThrottle, defaultInitialThrottle)
		if minT.known && maxT.known && minT.v > maxT.v {
			resp.Diagnostics.AddAttributeError(path.Root("rebalance").AtName("min_throttle"), "min_throttle above max_throttle",
				fmt.Sprintf("min_throttle is %d B/s but max_throttle is %d B/s: the dynamic throttle moves the rate between "+
					"these two bounds, and no rate is at once above the lower and below the upper. Lower min_throttle or raise "+
					"max_throttle so that min_throttle <= max_throttle.%s", minT.v, maxT.v, throttleDefaults(rb)))
		} else if initT.known && minT.known && maxT.known && (initT.v < minT.v || initT.v > maxT.v) {
			resp.Diagnostics.AddAttributeError(path.Root("rebalance").AtName("initial_throttle"), "initial_throttle outside [min_throttle, max_throttle]",
				fmt.Sprintf("initial_throttle is %d B/s, but it must lie between min_throttle (%d B/s) and max_throttle (%d B/s): "+
					"the dynamic throttle starts at initial_throttle and then keeps the rate within those bounds, so a start "+
					"outside them would run the first step at a rate the bounds forbid. Set initial_throttle between them, or "+
					"move min_throttle or max_throttle so that it lies within.%s", initT.v, minT.v, maxT.v, throttleDefaults(rb)))
		}
		if m := rb.Metrics; m != nil {
			validateMetrics(m, &resp.Diagnostics)
		}
		validateMaxApplyDuration(ctx, rb.MaxApplyDuration, cfg.Timeouts, &resp.Diagnostics)
	}
	if s := cfg.Scaling; s == nil || (s.HTTP == nil && s.Command == nil && s.External.IsNull()) {
		resp.Diagnostics.Append(missingScalingMethod())
	}
	if s := cfg.Scaling; s != nil {
		if h := s.HTTP; h != nil {
			if h.Endpoint.IsNull() {
				resp.Diagnostics.AddAttributeError(path.Root("scaling").AtName("http").AtName("endpoint"), "Missing endpoint",
					"The http scaling method needs the scaling API's base URL.")
			}
			if h.ClusterID.IsNull() {
				resp.Diagnostics.AddAttributeError(path.Root("scaling").AtName("http").AtName("cluster_id"), "Missing cluster_id",
					"The http scaling method needs the platform's id of this cluster.")
			}
		}
		if c := s.Command; c != nil && c.ScaleUp.IsNull() && c.ScaleDown.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("scaling").AtName("command"), "Empty command scaling method",
				"Set scale_up, scale_down or both: the argv lists run to add and to remove brokers.")
		}
	}
}

// throttleDefaults names the defaults a bound left out takes, which the
// user may not know they compared against.
func throttleDefaults(rb *rebalanceModel) string {
	var out string
	if rb.MinThrottle.IsNull() {
		out += fmt.Sprintf(" min_throttle is not set, so it is its default %d B/s (%d MiB/s).", defaultMinThrottle, defaultMinThrottle>>20)
	}
	if rb.MaxThrottle.IsNull() {
		out += fmt.Sprintf(" max_throttle is not set, so it is its default %d B/s (%d MiB/s).", defaultMaxThrottle, defaultMaxThrottle>>20)
	}
	return out
}

type knownInt struct {
	v     int64
	known bool
}

func int64OrNull(v types.Int64, def int64) knownInt {
	if v.IsUnknown() {
		return knownInt{}
	}
	if v.IsNull() {
		return knownInt{v: def, known: true}
	}
	return knownInt{v: v.ValueInt64(), known: true}
}

// validateMetrics checks the metrics block: a URL, at most one way to log
// in, a complete basic_auth and a CA that parses. Unknown values pass.
func validateMetrics(m *metricsModel, diags *diag.Diagnostics) {
	at := path.Root("rebalance").AtName("metrics")
	if m.PrometheusURL.IsNull() {
		diags.AddAttributeError(at.AtName("prometheus_url"), "Missing prometheus_url",
			"The metrics block needs prometheus_url to read broker metrics from: without it, kafkascale cannot see "+
				"the brokers' load and cannot adjust the throttle.\n\nSet prometheus_url to the base URL of your Prometheus "+
				"(for example \"http://prometheus:9090\"), or remove the metrics block to keep the throttle fixed.")
	}
	if m.BasicAuth != nil && !m.BearerTokenWO.IsNull() {
		diags.AddAttributeError(at.AtName("bearer_token_wo"), "Both basic_auth and bearer_token_wo",
			"Prometheus takes one Authorization header: set either the basic_auth block or bearer_token_wo, not both.")
	}
	if m.BasicAuth != nil && !m.BearerToken.IsNull() {
		diags.AddAttributeError(at.AtName("bearer_token"), "Both basic_auth and bearer_token",
			"Prometheus takes one Authorization header: set either the basic_auth block or bearer_token, not both.")
	}
	if b := m.BasicAuth; b != nil {
		if b.Username.IsNull() || (!b.Username.IsUnknown() && b.Username.ValueString() == "") {
			diags.AddAttributeError(at.AtName("basic_auth").AtName("username"), "Missing basic_auth username",
				"The basic_auth block needs the user name to log in to Prometheus with.")
		}
		if b.Password.IsNull() && b.PasswordWO.IsNull() {
			diags.AddAttributeError(at.AtName("basic_auth").AtName("password"), "Missing basic_auth password",
				"The basic_auth block needs the password to log in to Prometheus with: set password_wo (write-only, never "+
					"in the state) or password.")
		}
	}
	if !m.BearerTokenWO.IsUnknown() && !m.BearerTokenWO.IsNull() && m.BearerTokenWO.ValueString() == "" {
		diags.AddAttributeError(at.AtName("bearer_token_wo"), "Empty bearer_token_wo",
			"bearer_token_wo is empty; set the token, or leave the attribute out.")
	}
	if !m.BearerToken.IsUnknown() && !m.BearerToken.IsNull() && m.BearerToken.ValueString() == "" {
		diags.AddAttributeError(at.AtName("bearer_token"), "Empty bearer_token",
			"bearer_token is empty; set the token, or leave the attribute out.")
	}
	if !m.CACert.IsUnknown() && !m.CACert.IsNull() && !x509.NewCertPool().AppendCertsFromPEM([]byte(m.CACert.ValueString())) {
		diags.AddAttributeError(at.AtName("ca_cert"), "Invalid ca_cert",
			"ca_cert holds no PEM certificate (-----BEGIN CERTIFICATE-----); set the PEM of the CA that signed Prometheus' certificate.")
	}
}

// missingScalingMethod explains a kafkascale_cluster without a way to add
// or remove brokers.
func missingScalingMethod() diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(path.Root("scaling"), "Missing scaling method",
		"While attempting to validate kafkascale_cluster, no scaling method was configured, so a change of broker_count "+
			"could not add or remove a broker: kafkascale moves replicas, but the platform starts and stops the brokers.\n\n"+
			"Add a scaling block with exactly one of: http (a platform implementing the scaling API), command (argv lists "+
			"run to add and to remove brokers), external {} (someone else adds and removes them; kafkascale waits and moves "+
			"replicas).")
}

// validateMaxApplyDuration warns when timeouts would end an apply before
// max_apply_duration could: the timeout stops it with an error mid-group,
// where max_apply_duration would have stopped it cleanly between groups.
func validateMaxApplyDuration(ctx context.Context, v types.String, t timeouts.Value, diags *diag.Diagnostics) {
	if v.IsNull() || v.IsUnknown() || t.IsUnknown() {
		return
	}
	budget, err := time.ParseDuration(v.ValueString())
	if err != nil {
		return // the attribute's validator says so
	}
	for _, to := range []struct {
		name string
		get  func(context.Context, time.Duration) (time.Duration, diag.Diagnostics)
	}{{"create", t.Create}, {"update", t.Update}} {
		limit, ds := to.get(ctx, defaultOpTimeout)
		if ds.HasError() || budget < limit {
			continue
		}
		diags.AddAttributeWarning(path.Root("rebalance").AtName("max_apply_duration"), "max_apply_duration not below the timeout",
			fmt.Sprintf("max_apply_duration is %s but timeouts.%s is %s: the timeout ends the apply first, with an error in the middle "+
				"of a group, and max_apply_duration never takes effect. Set max_apply_duration below %s by at least one group's time.",
				budget, to.name, limit, limit))
		return
	}
}
