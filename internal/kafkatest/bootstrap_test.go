package kafkatest

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A controller formed from the bootstrap metadata template finalizes the
// same feature levels as one Kafka's formatter formats, and its
// meta.properties names its own node and cluster.
func TestBootstrapTemplateFormatsAsTheFormatter(t *testing.T) {
	RequireAcceptance(t)
	ctx := t.Context()
	copied := StartT(t, Options{Brokers: 1})
	if copied.bootstrap == "" {
		t.Fatal("the cluster's controller was formatted without the bootstrap metadata template (see the log for why)")
	}
	if _, err := os.Stat(filepath.Join(copied.bootstrap, "meta.properties")); !os.IsNotExist(err) {
		t.Errorf("the template %s holds a meta.properties (%v); every controller must write its own", copied.bootstrap, err)
	}
	meta, err := os.ReadFile(filepath.Join(copied.controllers[0].dir, "data", "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster.id=" + copied.ClusterID() + "\n", "node.id=3000\n"} {
		if !strings.Contains(string(meta), want) {
			t.Errorf("the controller's meta.properties lacks %q:\n%s", strings.TrimSpace(want), meta)
		}
	}
	got, err := FinalizedFeatures(ctx, copied.Client())
	if err != nil {
		t.Fatal(err)
	}
	copied.Stop()

	formatted := StartT(t, Options{Brokers: 1, formatEach: true})
	if formatted.bootstrap != "" {
		t.Fatal("formatEach still used the template")
	}
	want, err := FinalizedFeatures(ctx, formatted.Client())
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) || len(want) == 0 {
		t.Errorf("finalized features from the template: %v; from Kafka's formatter: %v", got, want)
	}
}
