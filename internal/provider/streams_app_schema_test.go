package provider

import "testing"

// Webhook URLs carry secrets often enough that Terraform must never print
// one in a plan.
func TestStreamsAppWebhookURLIsSensitive(t *testing.T) {
	a, ok := streamsAppResourceSchema().Attributes["on_expansion_url"]
	if !ok {
		t.Fatal("kafkascale_streams_app has no on_expansion_url")
	}
	if !a.IsSensitive() {
		t.Error("on_expansion_url is not sensitive: a plan would print its secret")
	}
}
