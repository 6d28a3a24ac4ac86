// Command testtimes reads the JSON events of a `go test -json` run (as
// gotestsum's --jsonfile writes them) and prints each package's time and
// the slowest top-level tests with where their time went: starting Kafka
// clusters, loading data, building the provider, running the Terraform
// CLI, and the rest (the operations the in-process provider runs, and the
// waits). The phases come from the lines the test helpers log; a test
// that logs none shows all its time as the rest.
//
// Usage: go run ./scripts/testtimes [-n 15] FILE
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// event is one line of `go test -json`.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// phases are the log lines that say how long a part of a test took, by
// the phase they count towards. The first group of each is the duration.
var phases = []struct {
	name string
	re   *regexp.Regexp
}{
	{"cluster start", regexp.MustCompile(`kafkatest: .*ready in (\S+?)[ )]`)},
	{"data load", regexp.MustCompile(`wrote \d+ MiB to \S+ in (\S+)`)},
	{"provider build", regexp.MustCompile(`provider built in (\S+)`)},
	{"terraform CLI", regexp.MustCompile(`terraform .*: exit -?\d+ after (\S+)`)},
	// A test side by side waits for a slot while the other packages'
	// tests run (internal/provider/side_by_side_test.go).
	{"slot wait", regexp.MustCompile(`waited (\S+) for a slot beside the other tests`)},
}

// jvmCPU is the line kafkatest logs when a cluster stops: the processor
// time its JVMs used. It is not a part of the wall time but what the test
// cost the machine, which on 2 cores is what bounds the tests side by side.
var jvmCPU = regexp.MustCompile(`kafkatest: cluster \S+ stopped: its JVMs used (\S+) of CPU`)

// testLogged matches a line a test logged with t.Log: indented, with its
// file and line.
var testLogged = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// sharedClusters is the name under which a package's shared clusters'
// CPU is listed.
const sharedClusters = "(the package's shared clusters)"

// pkgCPU is the line kafkatest.Main prints when a package's tests end.
var pkgCPU = regexp.MustCompile(`kafkatest: CPU of this package: test binary (\S+), the processes it started (\S+), of which Kafka JVMs (\S+)`)

// cpuUse is a package's CPU time: the test binary's, its child processes',
// and of those its Kafka JVMs'.
type cpuUse struct{ self, children, jvms time.Duration }

type testTime struct {
	name    string
	pkg     string
	total   time.Duration
	cpu     time.Duration // the JVMs' CPU time (jvmCPU)
	phases  map[string]time.Duration
	outcome string
	// cont is when a parallel test resumed after its t.Parallel (zero for
	// a test that ran alone); end is when it ended.
	cont, end time.Time
}

// pkgSpan is when a package's first and last events came.
type pkgSpan struct{ start, end time.Time }

func main() {
	n := flag.Int("n", 15, "how many of the slowest tests to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: testtimes [-n 15] FILE")
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	tests := map[string]*testTime{}
	packages := map[string]time.Duration{}
	get := func(pkg, name string) *testTime {
		top := shortPackage(pkg) + " " + strings.SplitN(name, "/", 2)[0]
		t := tests[top]
		if t == nil {
			t = &testTime{name: top, pkg: pkg, phases: map[string]time.Duration{}}
			tests[top] = t
		}
		return t
	}
	spans := map[string]*pkgSpan{}
	cpus := map[string]cpuUse{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		if sp := spans[e.Package]; sp == nil {
			spans[e.Package] = &pkgSpan{start: e.Time, end: e.Time}
		} else if e.Time.After(sp.end) {
			sp.end = e.Time
		}
		if e.Action == "cont" && e.Test != "" && !strings.Contains(e.Test, "/") {
			get(e.Package, e.Test).cont = e.Time
		}
		switch {
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			packages[e.Package] = secs(e.Elapsed)
		case e.Test == "":
			if m := pkgCPU.FindStringSubmatch(e.Output); e.Action == "output" && m != nil {
				var u cpuUse
				var errs [3]error
				u.self, errs[0] = time.ParseDuration(m[1])
				u.children, errs[1] = time.ParseDuration(m[2])
				u.jvms, errs[2] = time.ParseDuration(m[3])
				if errors.Join(errs[:]...) == nil {
					cpus[e.Package] = u
				}
			}
		case e.Action == "output":
			if m := jvmCPU.FindStringSubmatch(e.Output); m != nil {
				if d, err := time.ParseDuration(m[1]); err == nil {
					test := e.Test
					if !testLogged.MatchString(e.Output) {
						// Not t.Log'd: a package's shared cluster,
						// stopped by kafkatest.Main after the last
						// test, whose output test2json gives to
						// whichever test ran last.
						test = sharedClusters
					}
					get(e.Package, test).cpu += d
				}
				break
			}
			for _, p := range phases {
				if m := p.re.FindStringSubmatch(e.Output); m != nil {
					if d, err := time.ParseDuration(m[1]); err == nil {
						get(e.Package, e.Test).phases[p.name] += d
					}
					break
				}
			}
		case (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") && !strings.Contains(e.Test, "/"):
			t := get(e.Package, e.Test)
			t.total, t.outcome, t.end = secs(e.Elapsed), e.Action, e.Time
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	printPackages(packages)
	printPackageCPU(cpus, spans)
	printParallel(tests, spans)
	printSlowest(tests, *n)
	printCPU(tests, *n)
}

// printCPU lists the tests whose clusters used the most CPU, and the sum
// over every test: the machine's two cores give at most twice the wall
// time.
func printCPU(tests map[string]*testTime, n int) {
	var all []*testTime
	var sum time.Duration
	for _, t := range tests {
		if t.cpu > 0 {
			all = append(all, t)
			sum += t.cpu
		}
	}
	if len(all) == 0 {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i].cpu > all[j].cpu })
	fmt.Printf("\n== CPU time of the tests' Kafka JVMs: %s in all; the %d highest\n", sum.Round(time.Second), min(n, len(all)))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "JVM CPU\twall\t")
	for _, t := range all[:min(n, len(all))] {
		fmt.Fprintf(w, "%s\t%s\t %s\n", t.cpu.Round(time.Second), t.total.Round(time.Second), t.name)
	}
	w.Flush()
}

// printParallel shows, for each package whose tests ran side by side, how
// long its tests that run alone took before the first parallel test
// resumed (Go resumes them only once those are done), how long the side by
// side part took, and the last tests to end: a long test resumed late keeps
// the package running with one test where two could run.
func printParallel(tests map[string]*testTime, spans map[string]*pkgSpan) {
	byPkg := map[string][]*testTime{}
	for _, t := range tests {
		if !t.cont.IsZero() && !t.end.IsZero() {
			byPkg[t.pkg] = append(byPkg[t.pkg], t)
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(byPkg)) {
		par, sp := byPkg[pkg], spans[pkg]
		if sp == nil || len(par) < 2 {
			continue
		}
		first := par[0].cont
		for _, t := range par {
			if t.cont.Before(first) {
				first = t.cont
			}
		}
		fmt.Printf("\n== %s: %s of tests alone, then %s of %d tests side by side; the last to end:\n",
			shortPackage(pkg), first.Sub(sp.start).Round(time.Second), sp.end.Sub(first).Round(time.Second), len(par))
		sort.Slice(par, func(i, j int) bool { return par[i].end.After(par[j].end) })
		w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "resumed at\tended at\ttook\t")
		for _, t := range par[:min(6, len(par))] {
			fmt.Fprintf(w, "%s\t%s\t%s\t %s\n", t.cont.Sub(sp.start).Round(time.Second), t.end.Sub(sp.start).Round(time.Second),
				t.total.Round(time.Second), strings.SplitN(t.name, " ", 2)[1])
		}
		w.Flush()
	}
}

// shortPackage drops the module path: internal/provider, not the whole
// import path.
func shortPackage(pkg string) string {
	if i := strings.Index(pkg, "/internal/"); i >= 0 {
		return pkg[i+1:]
	}
	if i := strings.Index(pkg, "/cmd/"); i >= 0 {
		return pkg[i+1:]
	}
	return pkg
}

func secs(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Millisecond)
}

func printPackages(packages map[string]time.Duration) {
	names := make([]string, 0, len(packages))
	var sum time.Duration
	for p, d := range packages {
		names = append(names, p)
		sum += d
	}
	sort.Slice(names, func(i, j int) bool { return packages[names[i]] > packages[names[j]] })
	fmt.Printf("\n== time per package (sum %s)\n", sum.Round(time.Second))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	for _, p := range names {
		if packages[p] >= time.Second {
			fmt.Fprintf(w, "%s\t%s\n", packages[p].Round(time.Second), shortPackage(p))
		}
	}
	w.Flush()
}

func printSlowest(tests map[string]*testTime, n int) {
	all := make([]*testTime, 0, len(tests))
	for _, t := range tests {
		if t.outcome != "" {
			all = append(all, t)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].total > all[j].total })
	if len(all) > n {
		all = all[:n]
	}
	fmt.Printf("\n== the %d slowest tests, and where their time went\n", len(all))
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	header := "total\t"
	for _, p := range phases {
		header += p.name + "\t"
	}
	fmt.Fprintln(w, header+"the rest\t")
	for _, t := range all {
		line := fmt.Sprintf("%s\t", t.total.Round(time.Second))
		rest := t.total
		for _, p := range phases {
			d := t.phases[p.name]
			rest -= d
			line += fmt.Sprintf("%s\t", d.Round(time.Second))
		}
		fmt.Fprintf(w, "%s%s\t %s %s\n", line, max(rest, 0).Round(time.Second), t.name, t.outcome)
	}
	w.Flush()
}

// printPackageCPU prints each package's CPU time beside its wall time, and
// the sum against what two cores give over the whole run.
func printPackageCPU(cpus map[string]cpuUse, spans map[string]*pkgSpan) {
	if len(cpus) == 0 {
		return
	}
	names := slices.Collect(maps.Keys(cpus))
	total := func(u cpuUse) time.Duration { return u.self + u.children }
	sort.Slice(names, func(i, j int) bool { return total(cpus[names[i]]) > total(cpus[names[j]]) })
	var sum cpuUse
	var first, last time.Time
	for _, sp := range spans {
		if first.IsZero() || sp.start.Before(first) {
			first = sp.start
		}
		if sp.end.After(last) {
			last = sp.end
		}
	}
	fmt.Printf("\n== CPU time per package (the test binary, and the processes it started: Kafka JVMs, Terraform, Streams apps)\n")
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "CPU\ttest binary\tprocesses\tof which Kafka\twall\t")
	for _, p := range names {
		u := cpus[p]
		sum.self, sum.children, sum.jvms = sum.self+u.self, sum.children+u.children, sum.jvms+u.jvms
		wall := time.Duration(0)
		if sp := spans[p]; sp != nil {
			wall = sp.end.Sub(sp.start)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t %s\n", total(u), u.self, u.children, u.jvms, wall.Round(time.Second), shortPackage(p))
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t %s\n", total(sum), sum.self, sum.children, sum.jvms, last.Sub(first).Round(time.Second),
		fmt.Sprintf("in all; two cores give %s over the run", (2*last.Sub(first)).Round(time.Second)))
	w.Flush()
}
