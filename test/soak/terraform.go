//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// workdir is one Terraform working directory: its own main.tf and state,
// driving the provider built from this tree through dev_overrides.
type workdir struct {
	name string // "A" or "B"
	bin  string // terraform
	dir  string
	env  []string
	reg  *processes
}

// processes are the terraform process groups still running, so that every
// exit path, a signal included, can kill them with the providers they
// started.
type processes struct {
	mu     sync.Mutex
	groups map[int]*run
	closed bool // after shutdown no terraform starts
}

// startCmd starts cmd and registers it, unless shutdown has begun.
func (p *processes) startCmd(r *run) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("the soak is shutting down")
	}
	if err := r.cmd.Start(); err != nil {
		return err
	}
	p.groups[r.cmd.Process.Pid] = r
	return nil
}

func (p *processes) remove(r *run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.groups, r.cmd.Process.Pid)
}

// shutdown stops any new terraform from starting and kills the running
// ones.
func (p *processes) shutdown() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.killAll()
}

// killAll SIGKILLs every running group and waits for each terraform to be
// reaped.
func (p *processes) killAll() {
	p.mu.Lock()
	rs := make([]*run, 0, len(p.groups))
	for _, r := range p.groups {
		rs = append(rs, r)
	}
	p.mu.Unlock()
	for _, r := range rs {
		r.kill()
	}
}

// buildProvider builds the provider into root/plugins and writes the CLI
// configuration that installs it through dev_overrides.
func buildProvider(root string) (rcPath string, err error) {
	plugins := filepath.Join(root, "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		return "", err
	}
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(plugins, "terraform-provider-kafkascale"), ".")
	build.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the provider: %w\n%s", err, out)
	}
	rcPath = filepath.Join(root, "terraformrc")
	cfg := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"kafkascale/kafkascale\" = %q\n  }\n  direct {}\n}\n", plugins)
	return rcPath, os.WriteFile(rcPath, []byte(cfg), 0o644)
}

func newWorkdir(name, root, rc, providerLog string, reg *processes) (*workdir, error) {
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("terraform"); err != nil {
			return nil, fmt.Errorf("terraform is not on PATH (make tools installs it): %w", err)
		}
	}
	dir := filepath.Join(root, "work-"+name)
	tmp := filepath.Join(root, "tmp-"+name)
	for _, d := range []string{dir, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// TMPDIR: the provider serves Terraform on a unix socket there, which a
	// killed provider leaves behind; it goes with root.
	env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1",
		"TMPDIR="+tmp, "TF_DATA_DIR="+filepath.Join(dir, ".terraform"),
		// Terraform appends the provider's log lines of every command.
		"TF_LOG_PROVIDER=INFO", "TF_LOG_PATH="+providerLog)
	return &workdir{name: name, bin: bin, dir: dir, env: env, reg: reg}, nil
}

// configure writes main.tf.
func (w *workdir) configure(hcl string) error {
	return os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(hcl), 0o644)
}

// run is one terraform command in its own process group: a SIGKILL of the
// group takes terraform and the provider together, and Pdeathsig takes
// terraform down with the soak.
type run struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	mu     sync.Mutex // guards out while the command writes it
	exited chan struct{}
	reg    *processes
	start  time.Time
}

type lockedWriter struct{ r *run }

func (l lockedWriter) Write(p []byte) (int, error) {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.r.out.Write(p)
}

func (w *workdir) start(args ...string) (*run, error) {
	cmd := exec.Command(w.bin, append(args, "-no-color", "-input=false")...)
	cmd.Dir, cmd.Env = w.dir, w.env
	r := &run{cmd: cmd, out: &bytes.Buffer{}, exited: make(chan struct{}), reg: w.reg}
	cmd.Stdout, cmd.Stderr = lockedWriter{r}, lockedWriter{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r.start = time.Now()
	if err := w.reg.startCmd(r); err != nil {
		return nil, fmt.Errorf("starting terraform %s in %s: %w", args[0], w.name, err)
	}
	go func() {
		_ = cmd.Wait()
		w.reg.remove(r)
		close(r.exited)
	}()
	return r, nil
}

// wait waits for the command to end and returns its exit code and output.
func (r *run) wait() (int, string) {
	<-r.exited
	return r.cmd.ProcessState.ExitCode(), r.output()
}

func (r *run) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// kill SIGKILLs the whole group (terraform and its provider) and waits
// until terraform is reaped and the group has no live member.
func (r *run) kill() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.exited
	deadline := time.Now().Add(30 * time.Second)
	for groupAlive(r.cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

// groupAlive says whether process group pgid has a live (non-zombie)
// member.
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) >= 3 && f[0] != "Z" && f[2] == fmt.Sprint(pgid) {
			return true
		}
	}
	return false
}

// exec runs terraform to its end.
func (w *workdir) exec(args ...string) (int, string, error) {
	r, err := w.start(args...)
	if err != nil {
		return -1, "", err
	}
	code, out := r.wait()
	if code < 0 {
		return code, out, errors.New("terraform was killed")
	}
	return code, out, nil
}

// plan runs terraform plan -detailed-exitcode: 0 no changes, 2 changes,
// 1 an error.
func (w *workdir) plan() (int, string, error) {
	return w.exec("plan", "-detailed-exitcode")
}

// firstError is terraform's first error, summary and detail on one line,
// for the table.
func firstError(out string) string {
	if ds := diagnostics(out, "Error"); len(ds) > 0 {
		return ds[0]
	}
	return ""
}

// diagnostics lists terraform's diagnostics of a kind ("Error",
// "Warning"), each summary and detail on one line, capped; the warning
// that dev_overrides are in effect, which every command prints, is left
// out.
func diagnostics(out, kind string) []string {
	var found []string
	var cur []string
	flush := func() {
		if len(cur) > 0 && !strings.Contains(cur[0], "development overrides") {
			found = append(found, short(strings.Join(cur, " "), 600))
		}
		cur = nil
	}
	in := false
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(strings.TrimLeft(l, "│╷╵ "))
		switch {
		case strings.HasPrefix(t, kind+": "):
			flush()
			in = true
			cur = append(cur, strings.TrimPrefix(t, kind+": ")+":")
		case strings.HasPrefix(t, "Error: ") || strings.HasPrefix(t, "Warning: "):
			flush()
			in = false
		case in && strings.HasPrefix(t, "Plan: "), in && strings.HasPrefix(t, "Terraform "):
			flush()
			in = false
		case in && t != "" && !strings.HasPrefix(t, "with ") && !strings.HasPrefix(t, "on main.tf"):
			cur = append(cur, t)
		}
	}
	flush()
	return found
}
