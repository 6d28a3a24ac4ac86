package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// TestMain stops the shared Kafka cluster when the tests end, even when a
// test panics or the run is interrupted.
func TestMain(m *testing.M) { kafkatest.Main(m, nil) }

// sharedCluster is the three-broker cluster the import tests share: they
// create topics under their own prefixes and never change brokers.
func sharedCluster(t *testing.T) *kafkatest.Cluster {
	t.Helper()
	return kafkatest.Shared(t, kafkatest.Options{Brokers: 3})
}

// tfWorkspace is a Terraform working directory run with the real CLI
// against the provider built from this tree, installed by dev_overrides,
// as a user runs it.
type tfWorkspace struct {
	t   *testing.T
	tf  string
	dir string
	env []string
}

func newTFWorkspace(t *testing.T, bootstrap []string) *tfWorkspace {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		p, err := exec.LookPath("terraform")
		if err != nil {
			t.Fatal("no terraform on PATH (make tools installs one)")
		}
		tf = p
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "terraform-provider-kafkascale"), ".")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	rc := filepath.Join(t.TempDir(), "terraformrc")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"registry.terraform.io/kafkascale/kafkascale\" = %q\n  }\n  direct {}\n}\n", bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	w := &tfWorkspace{t: t, tf: tf, dir: t.TempDir(),
		env: append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")}
	quoted := make([]string, len(bootstrap))
	for i, s := range bootstrap {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	w.write("provider.tf", fmt.Sprintf(`terraform {
  required_providers {
    kafkascale = { source = "kafkascale/kafkascale" }
  }
}

provider "kafkascale" {
  bootstrap_servers = [%s]
}
`, strings.Join(quoted, ", ")))
	return w
}

func (w *tfWorkspace) write(name, content string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, name), []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// run runs terraform and returns its exit code and combined output; a
// failure to start it fails the test.
func (w *tfWorkspace) run(args ...string) (int, string) {
	w.t.Helper()
	cmd := exec.CommandContext(w.t.Context(), w.tf, append([]string{"-chdir=" + w.dir}, args...)...)
	cmd.Env = w.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	case err != nil:
		w.t.Fatalf("running terraform %v: %v", args, err)
	}
	return 0, out.String()
}

// mustRun runs terraform and fails the test unless it exits 0.
func (w *tfWorkspace) mustRun(args ...string) string {
	w.t.Helper()
	code, out := w.run(args...)
	if code != 0 {
		w.t.Fatalf("terraform %s exited %d:\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// plannedChange is one resource_changes entry of `terraform show -json`.
type plannedChange struct {
	Address string `json:"address"`
	Change  struct {
		Actions   []string        `json:"actions"`
		Importing json.RawMessage `json:"importing"`
		Before    map[string]any  `json:"before"`
		After     map[string]any  `json:"after"`
	} `json:"change"`
}

// savedPlan plans into a file and returns its resource changes and the
// plan's text output.
func (w *tfWorkspace) savedPlan(file string) ([]plannedChange, string) {
	w.t.Helper()
	text := w.mustRun("plan", "-no-color", "-input=false", "-out="+file)
	show := w.mustRun("show", "-json", file)
	// Warnings about dev_overrides go to the same stream, before the JSON.
	show = show[strings.Index(show, "{"):]
	var p struct {
		ResourceChanges []plannedChange `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(show), &p); err != nil {
		w.t.Fatalf("reading the plan: %v\n%s", err, show)
	}
	return p.ResourceChanges, text
}

// stateResources lists the resources in the state, with their attributes
// as JSON.
func (w *tfWorkspace) stateResources() map[string]json.RawMessage {
	w.t.Helper()
	show := w.mustRun("show", "-json")
	show = show[strings.Index(show, "{"):]
	var s struct {
		Values struct {
			RootModule struct {
				Resources []struct {
					Address string          `json:"address"`
					Values  json.RawMessage `json:"values"`
				} `json:"resources"`
			} `json:"root_module"`
		} `json:"values"`
	}
	if err := json.Unmarshal([]byte(show), &s); err != nil {
		w.t.Fatalf("reading the state: %v\n%s", err, show)
	}
	out := map[string]json.RawMessage{}
	for _, r := range s.Values.RootModule.Resources {
		out[r.Address] = r.Values
	}
	return out
}
