// Package examples_test checks that every piece of HCL a user may copy is
// valid: the fenced hcl/terraform blocks of README.md, docs/ and templates/
// are formatted as `terraform fmt` writes them (which also proves they
// parse), and every directory under examples/ passes `terraform validate`
// against this provider, built from the tree and installed through
// dev_overrides.
package examples_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the module root: go test runs in examples/.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func terraformBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		return p
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal("no terraform on PATH (make tools installs one): the examples cannot be checked")
	}
	return p
}

// hclBlock is one fenced block of HCL in a Markdown file.
type hclBlock struct {
	file string
	line int
	body string
}

var fence = regexp.MustCompile("^\\s*```(hcl|terraform|tf)\\s*$")

func markdownHCL(t *testing.T, path string) []hclBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out   []hclBlock
		cur   *hclBlock
		lines []string
		n     int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case cur == nil && fence.MatchString(l):
			cur, lines = &hclBlock{file: path, line: n + 1}, nil
		case cur != nil && strings.TrimSpace(l) == "```":
			cur.body = strings.Join(lines, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			lines = append(lines, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s:%d: an HCL block is never closed", path, cur.line)
	}
	return out
}

// Every HCL block in the README, the generated docs and their templates is
// what `terraform fmt` would write. A block that does not parse fails too.
func TestMarkdownHCLIsFormatted(t *testing.T) {
	root := repoRoot(t)
	tf := terraformBin(t)
	var files []string
	files = append(files, filepath.Join(root, "README.md"))
	for _, dir := range []string{"docs", "templates"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".md.tmpl")) {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for _, f := range files {
		for _, b := range markdownHCL(t, f) {
			checked++
			cmd := exec.Command(tf, "fmt", "-")
			cmd.Stdin = strings.NewReader(b.body)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			rel, _ := filepath.Rel(root, b.file)
			if err := cmd.Run(); err != nil {
				t.Errorf("%s:%d: the HCL block does not parse: %v\n%s", rel, b.line, err, stderr.String())
				continue
			}
			if stdout.String() != b.body {
				t.Errorf("%s:%d: the HCL block is not as terraform fmt writes it; write it as:\n%s", rel, b.line, stdout.String())
			}
		}
	}
	if checked < 10 {
		t.Fatalf("found only %d HCL blocks: the extraction is broken", checked)
	}
	t.Logf("%d HCL blocks in %d Markdown files", checked, len(files))
}

// Every example directory is formatted and valid against the provider as
// built from this tree.
func TestExamplesValidate(t *testing.T) {
	root := repoRoot(t)
	tf := terraformBin(t)

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "terraform-provider-kafkascale"), ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the provider: %v\n%s", err, out)
	}
	rc := filepath.Join(t.TempDir(), "terraformrc")
	cfg := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"registry.terraform.io/kafkascale/kafkascale\" = %q\n  }\n  direct {}\n}\n", bin)
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	var dirs []string
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".tf") && (len(dirs) == 0 || dirs[len(dirs)-1] != filepath.Dir(p)) {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 5 {
		t.Fatalf("found only %d example directories", len(dirs))
	}
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		t.Run(rel, func(t *testing.T) {
			run := func(args ...string) {
				t.Helper()
				// A copy, so that validate leaves nothing in the tree.
				work := t.TempDir()
				copyTF(t, dir, work)
				cmd := exec.Command(tf, append([]string{"-chdir=" + work}, args...)...)
				cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("terraform %s in %s: %v\n%s", strings.Join(args, " "), rel, err, out)
				}
			}
			run("fmt", "-check", "-diff")
			run("validate", "-no-color")
		})
	}
}

func copyTF(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	declared := false
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".tf") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		declared = declared || bytes.Contains(b, []byte("required_providers"))
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if !declared {
		// The per-resource examples are fragments shown on the resource's
		// page; a user's configuration declares the provider once.
		const providers = "terraform {\n  required_providers {\n    kafkascale = { source = \"kafkascale/kafkascale\" }\n  }\n}\n"
		if err := os.WriteFile(filepath.Join(to, "providers_test.tf"), []byte(providers), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
