package streamstest_test

import (
	"slices"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/streamstest"
)

func TestHome(t *testing.T) {
	for key, want := range map[string]int32{"h0-c1": 0, "h5-p2": 5, "h12-x": 12} {
		got, err := streamstest.Home(key)
		if err != nil || got != want {
			t.Errorf("Home(%q) = %d, %v; want %d", key, got, err, want)
		}
	}
	for _, key := range []string{"", "h", "h-1", "x5-p2", "h5", "h-3-p", "hx-p"} {
		if got, err := streamstest.Home(key); err == nil {
			t.Errorf("Home(%q) = %d, want an error", key, got)
		}
	}
}

func TestCountDiff(t *testing.T) {
	got := map[string]int64{"h0-p0": 3, "h1-p0": 2, "h9-p9": 1}
	want := map[string]int64{"h0-p0": 3, "h1-p0": 4, "h2-p0": 1}
	diff := streamstest.CountDiff(got, want)
	wantDiff := []string{
		"h1-p0: counted 2, produced 4",
		"h2-p0: counted 0, produced 1",
		"h9-p9: counted 1, produced none",
	}
	if !slices.Equal(diff, wantDiff) {
		t.Errorf("CountDiff = %q, want %q", diff, wantDiff)
	}
	if d := streamstest.CountDiff(want, want); len(d) != 0 {
		t.Errorf("CountDiff of equal counts = %q, want none", d)
	}
}

func TestInternalTopics(t *testing.T) {
	got := streamstest.InternalTopics("billing")
	want := []string{"billing-by-shard-repartition", "billing-byproduct-repartition", "billing-counts-store-changelog", "billing-customers-store-changelog", "billing-per-shard-changelog"}
	if !slices.Equal(got, want) {
		t.Errorf("InternalTopics = %q, want %q", got, want)
	}
	for _, topic := range streamstest.FixedTopics("billing") {
		if slices.Contains(streamstest.GrowingTopics("billing"), topic) {
			t.Errorf("%s is both fixed and growing", topic)
		}
	}
}
