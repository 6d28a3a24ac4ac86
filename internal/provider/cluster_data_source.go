package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

var (
	_ datasource.DataSource              = &ClusterDataSource{}
	_ datasource.DataSourceWithConfigure = &ClusterDataSource{}
)

// NewClusterDataSource is the constructor the provider registers.
func NewClusterDataSource() datasource.DataSource { return &ClusterDataSource{} }

// ClusterDataSource reads the cluster's brokers and the load each carries.
type ClusterDataSource struct {
	data *providerData
}

type clusterDataSourceModel struct {
	ID           types.String `tfsdk:"id"`
	ClusterID    types.String `tfsdk:"cluster_id"`
	ControllerID types.Int64  `tfsdk:"controller_id"`
	Brokers      types.List   `tfsdk:"brokers"`
}

var brokerAttrTypes = map[string]attr.Type{
	"id":                     types.Int64Type,
	"host":                   types.StringType,
	"port":                   types.Int64Type,
	"rack":                   types.StringType,
	"partition_count":        types.Int64Type,
	"preferred_leader_count": types.Int64Type,
	"leader_count":           types.Int64Type,
	"bytes_on_disk":          types.Int64Type,
	"disk_total_bytes":       types.Int64Type,
	"disk_usable_bytes":      types.Int64Type,
}

func (d *ClusterDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

func (d *ClusterDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Reads the Kafka cluster: its id, the active KRaft controller, and every broker with the " +
			"replicas, preferred leaders, leaders and bytes it holds. Use it to see the balance before and after a scaling operation.",
		Attributes: map[string]schema.Attribute{
			"id":            schema.StringAttribute{Computed: true, MarkdownDescription: "The cluster id."},
			"cluster_id":    schema.StringAttribute{Computed: true, MarkdownDescription: "The cluster id, as Kafka reports it."},
			"controller_id": schema.Int64Attribute{Computed: true, MarkdownDescription: "Node id of the active KRaft controller (the metadata quorum leader)."},
			"brokers": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Every registered broker, sorted by id.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":                     schema.Int64Attribute{Computed: true, MarkdownDescription: "Broker id (`node.id`)."},
					"host":                   schema.StringAttribute{Computed: true, MarkdownDescription: "Advertised host."},
					"port":                   schema.Int64Attribute{Computed: true, MarkdownDescription: "Advertised port."},
					"rack":                   schema.StringAttribute{Computed: true, MarkdownDescription: "`broker.rack`, empty when unset."},
					"partition_count":        schema.Int64Attribute{Computed: true, MarkdownDescription: "Partition replicas hosted by the broker, internal topics included."},
					"preferred_leader_count": schema.Int64Attribute{Computed: true, MarkdownDescription: "Partitions whose first (preferred) replica is this broker."},
					"leader_count":           schema.Int64Attribute{Computed: true, MarkdownDescription: "Partitions this broker leads now."},
					"bytes_on_disk":          schema.Int64Attribute{Computed: true, MarkdownDescription: "Bytes of all replicas in the broker's log dirs (DescribeLogDirs)."},
					"disk_total_bytes":       schema.Int64Attribute{Computed: true, MarkdownDescription: "Total bytes of the volumes holding the log dirs; -1 when the broker does not report it."},
					"disk_usable_bytes":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Free bytes on those volumes; -1 when the broker does not report it."},
				}},
			},
		},
	}
}

func (d *ClusterDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *ClusterDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	if d.data == nil {
		resp.Diagnostics.Append(providerNotConfigured())
		return
	}
	desc, err := d.data.kafka.DescribeCluster(ctx)
	if err != nil {
		resp.Diagnostics.Append(kafkaError("read the cluster", err))
		return
	}
	tflog.Debug(ctx, "described cluster", map[string]any{"cluster_id": desc.ClusterID, "brokers": len(desc.Brokers)})

	state := clusterDataSourceModel{
		ID:           types.StringValue(desc.ClusterID),
		ClusterID:    types.StringValue(desc.ClusterID),
		ControllerID: types.Int64Value(int64(desc.ControllerID)),
	}
	brokers, diags := brokersValue(desc.Brokers)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	state.Brokers = brokers
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func brokersValue(bs []kafka.BrokerDescription) (types.List, diag.Diagnostics) {
	objType := types.ObjectType{AttrTypes: brokerAttrTypes}
	elems := make([]attr.Value, 0, len(bs))
	var diags diag.Diagnostics
	for _, b := range bs {
		obj, ds := types.ObjectValue(brokerAttrTypes, map[string]attr.Value{
			"id":                     types.Int64Value(int64(b.ID)),
			"host":                   types.StringValue(b.Host),
			"port":                   types.Int64Value(int64(b.Port)),
			"rack":                   types.StringValue(b.Rack),
			"partition_count":        types.Int64Value(int64(b.Replicas)),
			"preferred_leader_count": types.Int64Value(int64(b.PreferredLeaders)),
			"leader_count":           types.Int64Value(int64(b.Leaders)),
			"bytes_on_disk":          types.Int64Value(b.BytesOnDisk),
			"disk_total_bytes":       types.Int64Value(b.DiskTotalBytes),
			"disk_usable_bytes":      types.Int64Value(b.DiskUsableBytes),
		})
		diags.Append(ds...)
		elems = append(elems, obj)
	}
	list, ds := types.ListValue(objType, elems)
	diags.Append(ds...)
	return list, diags
}
