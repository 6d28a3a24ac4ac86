package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/metrics"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

type scalingModel struct {
	BrokerStartTime types.String         `tfsdk:"broker_start_time"`
	HTTP            *httpScalingModel    `tfsdk:"http"`
	Command         *commandScalingModel `tfsdk:"command"`
	External        types.Object         `tfsdk:"external"`
}

type httpScalingModel struct {
	Endpoint  types.String `tfsdk:"endpoint"`
	ClusterID types.String `tfsdk:"cluster_id"`
	Token     types.String `tfsdk:"token"`
	TokenWO   types.String `tfsdk:"token_wo"`
}

type commandScalingModel struct {
	ScaleUp   types.List `tfsdk:"scale_up"`
	ScaleDown types.List `tfsdk:"scale_down"`
}

type rebalanceModel struct {
	InitialThrottle    types.Int64     `tfsdk:"initial_throttle"`
	MinThrottle        types.Int64     `tfsdk:"min_throttle"`
	MaxThrottle        types.Int64     `tfsdk:"max_throttle"`
	MaxMovesPerStep    types.Int64     `tfsdk:"max_moves_per_step"`
	MaxMovesPerBroker  types.Int64     `tfsdk:"max_moves_per_broker"`
	MinFreeDiskPercent types.Float64   `tfsdk:"min_free_disk_percent"`
	MaxDiskSkewPercent types.Float64   `tfsdk:"max_disk_skew_percent"`
	KeepBalanced       types.Bool      `tfsdk:"keep_balanced"`
	KeepLeaders        types.Bool      `tfsdk:"keep_leaders_balanced"`
	AdjustInterval     types.String    `tfsdk:"adjust_interval"`
	MaxApplyDuration   types.String    `tfsdk:"max_apply_duration"`
	Awareness          *awarenessModel `tfsdk:"awareness"`
	Metrics            *metricsModel   `tfsdk:"metrics"`
}

type awarenessModel struct {
	Separator  types.String `tfsdk:"separator"`
	Dimensions types.List   `tfsdk:"dimensions"`
}

type metricsModel struct {
	PrometheusURL    types.String     `tfsdk:"prometheus_url"`
	IOPressureQuery  types.String     `tfsdk:"io_pressure_query"`
	HandlerIdleQuery types.String     `tfsdk:"handler_idle_query"`
	BearerToken      types.String     `tfsdk:"bearer_token"`
	BearerTokenWO    types.String     `tfsdk:"bearer_token_wo"`
	CACert           types.String     `tfsdk:"ca_cert"`
	BasicAuth        *basicAuthModel  `tfsdk:"basic_auth"`
	Thresholds       *thresholdsModel `tfsdk:"thresholds"`
}

type basicAuthModel struct {
	Username   types.String `tfsdk:"username"`
	Password   types.String `tfsdk:"password"`
	PasswordWO types.String `tfsdk:"password_wo"`
}

type thresholdsModel struct {
	MaxIOPressure  types.Float64 `tfsdk:"max_io_pressure"`
	MinHandlerIdle types.Float64 `tfsdk:"min_handler_idle"`
}

// clusterSettings is the rebalance block converted for the engine.
type clusterSettings struct {
	options  engine.Options
	executor executor.Settings
	advisor  executor.RateAdvisor // nil without a metrics block
}

func rebalanceSettings(rb *rebalanceModel) (clusterSettings, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := clusterSettings{options: engine.DefaultOptions()}
	s.options.ThrottleBytesPerSec = defaultInitialThrottle
	s.executor = executor.Settings{AdjustInterval: defaultAdjustInterval, MinThrottle: defaultMinThrottle, MaxThrottle: defaultMaxThrottle, MinPollInterval: executor.DefaultMinPollInterval}
	if rb == nil {
		return s, diags
	}
	setInt64(&s.options.ThrottleBytesPerSec, rb.InitialThrottle)
	setInt64(&s.executor.MinThrottle, rb.MinThrottle)
	setInt64(&s.executor.MaxThrottle, rb.MaxThrottle)
	setInt(&s.options.MaxMovesPerStep, rb.MaxMovesPerStep)
	setInt(&s.options.MaxMovesPerBroker, rb.MaxMovesPerBroker)
	if !rb.MinFreeDiskPercent.IsNull() {
		s.options.MinFreeDiskPercent = rb.MinFreeDiskPercent.ValueFloat64()
	}
	if !rb.MaxDiskSkewPercent.IsNull() {
		s.options.MaxDiskSkewPercent = rb.MaxDiskSkewPercent.ValueFloat64()
	}
	if v := rb.AdjustInterval.ValueString(); v != "" {
		d, _ := time.ParseDuration(v) // validated by the schema
		s.executor.AdjustInterval = d
	}
	if v := rb.MaxApplyDuration.ValueString(); v != "" {
		d, _ := time.ParseDuration(v) // validated by the schema
		s.executor.MaxRunDuration = d
	}
	if a := rb.Awareness; a != nil {
		s.options.Awareness.Separator = a.Separator.ValueString()
		if !a.Dimensions.IsNull() {
			diags.Append(a.Dimensions.ElementsAs(context.Background(), &s.options.Awareness.Dimensions, false)...)
		}
	}
	if err := s.options.Validate(); err != nil {
		diags.AddAttributeError(path.Root("rebalance"), "Invalid rebalance settings", err.Error())
	}
	if m := rb.Metrics; m != nil && !m.PrometheusURL.IsNull() {
		prom, err := metrics.New(metricsConfig(m))
		if err != nil {
			// The schema validates each attribute; what remains is the URL.
			diags.AddAttributeError(path.Root("rebalance").AtName("metrics").AtName("prometheus_url"), "Invalid metrics settings", err.Error())
			return s, diags
		}
		aimd := executor.AIMD{
			Source: prom,
			// A tenth of the range per interval: from min to max in ten
			// healthy intervals, while a halving reacts at once.
			Increase:       max((s.executor.MaxThrottle-s.executor.MinThrottle)/10, 1),
			DecreaseFactor: 0.5,
			MaxIOPressure:  defaultMaxIOPressure,
			MinHandlerIdle: defaultMinHandlerIdle,
		}
		if t := m.Thresholds; t != nil {
			if !t.MaxIOPressure.IsNull() {
				aimd.MaxIOPressure = t.MaxIOPressure.ValueFloat64()
			}
			if !t.MinHandlerIdle.IsNull() {
				aimd.MinHandlerIdle = t.MinHandlerIdle.ValueFloat64()
			}
		}
		s.advisor = aimd
	}
	return s, diags
}

func setInt64(dst *int64, v types.Int64) {
	if !v.IsNull() && !v.IsUnknown() {
		*dst = v.ValueInt64()
	}
}

func setInt(dst *int, v types.Int64) {
	if !v.IsNull() && !v.IsUnknown() {
		*dst = int(v.ValueInt64())
	}
}

// scalingToken is token_wo when set, else token (they conflict).
func scalingToken(h *httpScalingModel) string { return orWriteOnly(h.TokenWO, h.Token) }

// orWriteOnly is a secret's write-only form when set, else its stored
// form: the schema lets only one of them be set.
func orWriteOnly(wo, stored types.String) string {
	if v := wo.ValueString(); v != "" {
		return v
	}
	return stored.ValueString()
}

// buildScaler turns the scaling block into the platform method.
func buildScaler(ctx context.Context, s *scalingModel) (executor.Scaler, diag.Diagnostics) {
	var diags diag.Diagnostics
	logf := tflogFunc
	switch {
	case s == nil:
		diags.Append(missingScalingMethod())
	case s.HTTP != nil:
		cl, err := platform.NewHTTPClient(platform.HTTPConfig{
			Endpoint:  s.HTTP.Endpoint.ValueString(),
			ClusterID: s.HTTP.ClusterID.ValueString(),
			Token:     platform.ResolveToken(scalingToken(s.HTTP)),
			Logger:    logf,
		})
		if err != nil {
			diags.AddAttributeError(path.Root("scaling").AtName("http"), "Invalid scaling API settings", err.Error())
			return nil, diags
		}
		return &platform.HTTPScaler{Client: cl}, diags
	case s.Command != nil:
		c := &platform.CommandScaler{Logger: logf}
		if !s.Command.ScaleUp.IsNull() {
			diags.Append(s.Command.ScaleUp.ElementsAs(ctx, &c.ScaleUp, false)...)
		}
		if !s.Command.ScaleDown.IsNull() {
			diags.Append(s.Command.ScaleDown.ElementsAs(ctx, &c.ScaleDown, false)...)
		}
		return c, diags
	default:
		return platform.ExternalScaler{}, diags
	}
	return nil, diags
}

// scalingMethod names the configured scaling method, under which broker
// add and remove times are measured and used (engine.Timings).
func scalingMethod(s *scalingModel) string {
	switch {
	case s == nil:
		return ""
	case s.HTTP != nil:
		return "http"
	case s.Command != nil:
		return "command"
	default:
		return "external"
	}
}

// brokerStartTime is scaling.broker_start_time, what the plan's estimate
// counts per added broker until a scale-out with this method has measured
// it; zero when it is not set (validated as a duration by the schema).
func brokerStartTime(s *scalingModel) time.Duration {
	if s == nil || s.BrokerStartTime.IsNull() || s.BrokerStartTime.IsUnknown() {
		return 0
	}
	d, _ := time.ParseDuration(s.BrokerStartTime.ValueString())
	return d
}

// tflogFunc sends the platform's log lines to Terraform's log.
func tflogFunc(ctx context.Context, l platform.LogLevel, msg string, f map[string]any) {
	switch l {
	case platform.LogDebug:
		tflog.Debug(ctx, msg, f)
	case platform.LogInfo:
		tflog.Info(ctx, msg, f)
	case platform.LogWarn:
		tflog.Warn(ctx, msg, f)
	default:
		tflog.Error(ctx, msg, f)
	}
}

// tflogLogger sends the executor's progress to Terraform's log.
type tflogLogger struct{}

func (tflogLogger) Info(ctx context.Context, msg string, f map[string]any) { tflog.Info(ctx, msg, f) }
func (tflogLogger) Warn(ctx context.Context, msg string, f map[string]any) { tflog.Warn(ctx, msg, f) }

// metricsConfig is the metrics block as the metrics client takes it.
func metricsConfig(m *metricsModel) metrics.Config {
	cfg := metrics.Config{
		URL:              m.PrometheusURL.ValueString(),
		IOPressureQuery:  m.IOPressureQuery.ValueString(),
		HandlerIdleQuery: m.HandlerIdleQuery.ValueString(),
		BearerToken:      orWriteOnly(m.BearerTokenWO, m.BearerToken),
		CACertPEM:        []byte(m.CACert.ValueString()),
	}
	if b := m.BasicAuth; b != nil {
		cfg.Username, cfg.Password = b.Username.ValueString(), orWriteOnly(b.PasswordWO, b.Password)
	}
	return cfg
}
