package engine_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

var update = flag.Bool("update", false, "rewrite the golden plans in testdata")

// goldenCase is a small fixed cluster whose whole plan is pinned in
// testdata/<name>.golden.json. Regenerate with `go test -run Golden -update`
// after a deliberate change, and read the diff.
type goldenCase struct {
	Cluster engine.Cluster `json:"cluster"`
	Change  engine.Change  `json:"change"`
	Options engine.Options `json:"options"`
}

func TestGoldenPlans(t *testing.T) {
	for _, name := range []string{"scale_out_racks", "scale_in_uneven_racks"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", name+".input.json"))
			if err != nil {
				t.Fatal(err)
			}
			var gc goldenCase
			if err := json.Unmarshal(in, &gc); err != nil {
				t.Fatal(err)
			}
			p := mustPlan(t, gc.Cluster, gc.Change, gc.Options)
			simulate(t, gc.Cluster, gc.Change, gc.Options, p)
			got, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("plan differs from %s; run with -update after checking the change:\n%s", path, got)
			}
			// A persisted plan reads back to the same plan, as the executor
			// needs to resume it.
			var back engine.Plan
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.MarshalIndent(&back, "", "  ")
			if !bytes.Equal(append(again, '\n'), want) {
				t.Fatalf("plan does not survive a JSON round trip")
			}
		})
	}
}
