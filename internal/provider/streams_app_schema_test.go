package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/streams"
)

// Webhook URLs carry secrets often enough that Terraform must never print
// one in a plan.
func TestStreamsAppWebhookURLIsSensitive(t *testing.T) {
	a, ok := streamsAppResourceSchema(context.Background()).Attributes["on_expansion_url"]
	if !ok {
		t.Fatal("kafkascale_streams_app has no on_expansion_url")
	}
	if !a.IsSensitive() {
		t.Error("on_expansion_url is not sensitive: a plan would print its secret")
	}
}

func TestStreamsAppCoExpandWebhookURLIsSensitive(t *testing.T) {
	b, ok := streamsAppResourceSchema(context.Background()).Blocks["co_expand"].(schema.ListNestedBlock)
	if !ok {
		t.Fatal("kafkascale_streams_app has no co_expand list block")
	}
	if a := b.NestedObject.Attributes["on_expansion_url"]; a == nil || !a.IsSensitive() {
		t.Error("co_expand.on_expansion_url is not sensitive: a plan would print its secret")
	}
}

// A refusal about a co-expanded app lands on its co_expand block; one
// about the undeclared apps on co_expand itself.
func TestStreamsPlanDiagnosticsPointAtTheCoExpandBlock(t *testing.T) {
	err := &engine.InputError{Problems: []error{
		&streams.Problem{Kind: streams.ProblemClassicLive, Field: streams.FieldQuiesce, App: "fraud", Subject: "fraud", Members: 2},
		&streams.Problem{Kind: streams.ProblemShrink, Field: streams.FieldPartitions, App: "fraud", Subject: "fraud", Topic: "payments",
			Role: streams.RoleSource, Partitions: 12, Target: 8, Err: engine.CheckNoShrink("payments", 12, 8)},
		&streams.Problem{Kind: streams.ProblemUndeclaredReaders, Field: streams.FieldCoExpand, Subject: "shop", Readers: []streams.Reader{{App: "audit", Reads: []string{"orders"}}}},
		&streams.Problem{Kind: streams.ProblemNotStatic, Field: streams.FieldStatic, Subject: "shop", Target: 8},
	}}
	diags := streamsPlanDiagnostics("shop", []string{"billing", "fraud"}, err)
	want := []path.Path{
		path.Root("co_expand").AtListIndex(1).AtName("quiesce"),
		path.Root("co_expand").AtListIndex(1).AtName("application_id"),
		path.Root("co_expand"),
		path.Root("static_partitioning"),
	}
	if len(diags) != len(want) {
		t.Fatalf("%d diagnostics, want %d: %v", len(diags), len(want), diags)
	}
	for i, d := range diags {
		wp, ok := d.(diag.DiagnosticWithPath)
		if !ok || !wp.Path().Equal(want[i]) {
			t.Errorf("diagnostic %d (%s) is not on %s", i, d.Detail(), want[i])
		}
	}
}
