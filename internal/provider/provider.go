// Package provider is the Terraform face of kafkascale. It holds the
// schemas of the resources and data sources; validates configurations,
// each refusal explaining its bound, and checks at plan time the outside
// systems a change will use (the scaling API, commands, Prometheus);
// converts between Terraform values and the plain Go values of
// internal/engine, internal/engine/executor and internal/kafka; fills the
// plan with the executor's preview of a change (moves, bytes, duration),
// from the cluster as the last refresh saw it (kept in private state);
// makes one executor call per apply; and turns the errors and warnings that
// come back into diagnostics on the attribute they concern. What moves, in
// what order and whether it is safe is decided in internal/engine and
// internal/engine/executor.
package provider

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/validators"
)

// Environment variables read when the matching attribute is unset; the
// kafkascale command reads the same ones (internal/kafka holds them).
const (
	EnvBootstrapServers = kafka.EnvBootstrapServers
	EnvSASLUsername     = kafka.EnvSASLUsername
	EnvSASLPassword     = kafka.EnvSASLPassword
)

var (
	_ provider.Provider                   = &KafkascaleProvider{}
	_ provider.ProviderWithValidateConfig = &KafkascaleProvider{}
)

// KafkascaleProvider is the provider implementation.
type KafkascaleProvider struct {
	version string
}

// New returns a constructor the plugin server calls once per provider block.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &KafkascaleProvider{version: version} }
}

type providerModel struct {
	BootstrapServers types.List           `tfsdk:"bootstrap_servers"`
	RequestTimeout   types.String         `tfsdk:"request_timeout"`
	TLS              *tlsModel            `tfsdk:"tls"`
	SASL             *saslModel           `tfsdk:"sasl"`
	OperationLease   *operationLeaseModel `tfsdk:"operation_lease"`
}

type tlsModel struct {
	CACert             types.String `tfsdk:"ca_cert"`
	ClientCert         types.String `tfsdk:"client_cert"`
	ClientKey          types.String `tfsdk:"client_key"`
	InsecureSkipVerify types.Bool   `tfsdk:"insecure_skip_verify"`
	ServerName         types.String `tfsdk:"server_name"`
}

// providerData is what every resource and data source receives: the clients,
// built once per provider block.
type providerData struct {
	kafka *kafka.Client
	// lease keeps this run's operations, and other runs', from overlapping.
	lease *executor.Lessee
	// orphans are the throttles finished operations left, read once per
	// provider process (orphans.go).
	orphans orphanCache
	// previews shares a preview between the resources and data sources
	// of one run (preview_memo.go).
	previews executor.PreviewMemo
}

func (p *KafkascaleProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "kafkascale"
	resp.Version = p.version
}

func (p *KafkascaleProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = providerSchema()
}

func providerSchema() schema.Schema {
	return schema.Schema{
		MarkdownDescription: "Scale Apache Kafka from Terraform: broker count, topics and Kafka Streams applications, " +
			"with throttled, disk-safe, resumable reassignments.",
		Attributes: map[string]schema.Attribute{
			"bootstrap_servers": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Kafka bootstrap servers as `host:port`. Falls back to the comma-separated `" +
					EnvBootstrapServers + "` environment variable.",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1),
					listvalidator.ValueStringsAre(validators.HostPort()),
				},
			},
			"request_timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long one admin request to Kafka may take, dial included, as a Go duration " +
					"(`30s`, `2m`), between `1s` and `1h`. An unreachable cluster fails after this long with an error naming the servers tried. " +
					"Falls back to `" + kafka.EnvRequestTimeout + "`, then `30s`.",
				Validators: durationValidators(time.Second, time.Hour, explainRequestTimeout),
			},
		},
		Blocks: map[string]schema.Block{
			"operation_lease": operationLeaseBlock(),
			"tls": schema.SingleNestedBlock{
				MarkdownDescription: "Connect with TLS. An empty block uses the system trust store. A TLS failure (untrusted CA, wrong host name, refused client certificate) is reported at once with the certificate problem. See the security guide. " +
					"Each setting left out falls back to its environment variable (`" + kafka.EnvTLSCACert + "`, `" + kafka.EnvTLSClientCert + "`, `" +
					kafka.EnvTLSClientKey + "`, `" + kafka.EnvTLSServerName + "`, `" + kafka.EnvTLSInsecureSkipVerify + "`); without the block, " +
					"TLS is still used when `" + kafka.EnvTLS + "=true` or one of those is set (and `" + kafka.EnvTLS + "=false` is not), as in the `kafkascale` command.",
				Attributes: map[string]schema.Attribute{
					"ca_cert": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "CA certificate that signed the brokers' certificates: inline PEM (a value containing `-----BEGIN`) or a file path.",
					},
					"client_cert": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Client certificate for mutual TLS: inline PEM or a file path. Requires `client_key`.",
						Validators: []validator.String{
							stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("client_key")),
						},
					},
					"client_key": schema.StringAttribute{
						Optional:            true,
						Sensitive:           true,
						MarkdownDescription: "Private key of `client_cert`: inline PEM or a file path. Sensitive: never shown in plans nor logged; prefer a file path, so that the key is not in the configuration.",
						Validators: []validator.String{
							stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("client_cert")),
						},
					},
					"insecure_skip_verify": schema.BoolAttribute{
						Optional:            true,
						MarkdownDescription: "Skip verification of the brokers' certificates. Unsafe; for tests only.",
					},
					"server_name": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Host name to verify the brokers' certificates against, when it differs from the address dialled.",
					},
				},
			},
			"sasl": saslBlock(),
		},
	}
}

// ValidateConfig refuses what the configuration alone gets wrong, such as
// a token under SCRAM: `terraform validate` reports it at the attribute.
func (p *KafkascaleProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	validateSASL(cfg.SASL, &resp.Diagnostics)
}

func (p *KafkascaleProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}

	// A value known only after apply (say, the output of a resource that
	// creates the cluster) cannot configure a client now; Terraform calls
	// Configure again once it is known.
	if cfg.BootstrapServers.IsUnknown() {
		resp.Diagnostics.AddAttributeWarning(path.Root("bootstrap_servers"), "Bootstrap servers not yet known",
			"The provider cannot reach Kafka until bootstrap_servers is known; resources that need it will wait for the apply that sets it.")
		return
	}

	kc := kafka.Config{RequestTimeout: kafka.DefaultRequestTimeout}
	if !cfg.BootstrapServers.IsNull() {
		resp.Diagnostics.Append(cfg.BootstrapServers.ElementsAs(ctx, &kc.BootstrapServers, false)...)
	} else {
		kc.BootstrapServers = kafka.SplitServers(os.Getenv(EnvBootstrapServers))
	}
	if len(kc.BootstrapServers) == 0 {
		resp.Diagnostics.AddAttributeError(path.Root("bootstrap_servers"), "Missing bootstrap servers",
			"Set bootstrap_servers in the provider block or the "+EnvBootstrapServers+" environment variable (comma-separated host:port).")
		return
	}
	if v := cfg.RequestTimeout.ValueString(); v != "" {
		d, _ := time.ParseDuration(v) // validated by the schema
		kc.RequestTimeout = d
	} else if d, err := kafka.RequestTimeoutFromEnvironment(os.Getenv); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("request_timeout"), "Invalid "+kafka.EnvRequestTimeout, err.Error())
	} else if d > 0 {
		kc.RequestTimeout = d
	}
	if cfg.TLS != nil {
		kc.TLS = &kafka.TLSConfig{
			CACert:             cfg.TLS.CACert.ValueString(),
			ClientCert:         cfg.TLS.ClientCert.ValueString(),
			ClientKey:          cfg.TLS.ClientKey.ValueString(),
			InsecureSkipVerify: cfg.TLS.InsecureSkipVerify.ValueBool(),
			ServerName:         cfg.TLS.ServerName.ValueString(),
		}
	}
	// The environment completes the tls block, or turns TLS on without
	// one, by the same rule as in the kafkascale command.
	tlsConfig, err := kafka.TLSWithEnvironment(kc.TLS, os.Getenv)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("tls"), "Invalid TLS environment variable", err.Error())
	}
	kc.TLS = tlsConfig
	if resp.Diagnostics.HasError() {
		return
	}
	if cfg.SASL == nil && kafka.SASLFromEnvironment(os.Getenv) {
		// Credentials kept only in the environment turn SASL on, as in
		// the kafkascale command: ignoring them would connect without
		// authentication, or fail with no word of why.
		cfg.SASL = &saslModel{}
	}
	if cfg.SASL != nil {
		kc.SASL = saslSettings(ctx, cfg.SASL, os.Getenv, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
	}

	client, err := kafka.NewClient(kc)
	if err != nil {
		resp.Diagnostics.AddError("Invalid Kafka connection settings",
			"While configuring the Kafka client, the settings were rejected: "+err.Error())
		return
	}
	tflog.Debug(ctx, "configured Kafka client", map[string]any{
		"bootstrap_servers": strings.Join(kc.BootstrapServers, ","),
		"tls":               kc.TLS != nil,
		"sasl_mechanism":    saslMechanism(kc.SASL),
		"request_timeout":   kc.RequestTimeout.String(),
	})
	data := &providerData{kafka: client, lease: newLessee(client, cfg.OperationLease)}
	resp.DataSourceData = data
	resp.ResourceData = data
}

func saslMechanism(s *kafka.SASLConfig) string {
	if s == nil {
		return ""
	}
	return s.Mechanism
}

func (p *KafkascaleProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewClusterResource,
		NewTopicResource,
		NewStreamsAppResource,
	}
}

func (p *KafkascaleProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewClusterDataSource,
		NewRebalancePlanDataSource,
	}
}
