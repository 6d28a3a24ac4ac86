//go:build linux

package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

// row is one line of the table, and the violations behind its cells.
type row struct {
	seed     uint64
	st       *step
	secs     float64
	outs     []outcome
	cells    map[string]string
	problems []string
}

func (r *row) set(col, val string, problems ...string) {
	r.cells[col] = val
	for _, p := range problems {
		r.problems = append(r.problems, col+": "+p)
	}
}

// clients are the checks' Kafka clients for one step, seeded with the
// brokers running now (the ones the soak started with may be gone).
type clients struct {
	adm *kadm.Client
	kcl *kgo.Client
	ks  *kafka.Client
}

func (s *soak) clients() (*clients, error) {
	servers := s.c.BootstrapServers()
	kcl, err := kgo.NewClient(kgo.SeedBrokers(servers...))
	if err != nil {
		return nil, err
	}
	ks, err := kafka.NewClient(kafka.Config{BootstrapServers: servers})
	if err != nil {
		kcl.Close()
		return nil, err
	}
	return &clients{adm: kadm.NewClient(kcl), kcl: kcl, ks: ks}, nil
}

func (c *clients) close() { c.kcl.Close(); c.ks.Close() }

// check runs every invariant after st, on the cluster itself.
func (s *soak) check(ctx context.Context, r *row) error {
	cl, err := s.clients()
	if err != nil {
		return err
	}
	defer cl.close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	s.checkApplies(r)
	unfinished, err := unfinishedOperations(ctx, cl.ks)
	if err != nil {
		r.set("planA", "?", "listing the operations: "+err.Error())
	}
	clean := s.checkPlans(r, unfinished)
	s.checkOffline(ctx, cl, r)
	switch {
	case clean && len(unfinished) == 0 && len(s.dead) == 0:
		s.checkLeftovers(ctx, cl, r, true)
		s.checkRacks(ctx, cl, r)
	case allPaused(unfinished) && !r.interrupted():
		// An apply that paused at max_apply_duration let its moves in
		// flight finish and removed the throttles; the drain it paused
		// may keep its brokers cordoned.
		s.checkLeftovers(ctx, cl, r, false)
	}
	cellVal, problems := s.streams.check(ctx, cl.adm)
	r.set("streams", cellVal, problems...)
	lc := s.led.verify(ctx, cl.adm, s.c.BootstrapServers())
	if lc.ok() {
		r.set("ledger", lc.String())
	} else {
		r.set("ledger", "FAIL", lc.String())
	}
	return nil
}

// checkRacks checks replicas even per rack where the provider promises
// it: keep_balanced on, or a new broker count applied with no topic
// changed beside it. Elsewhere the cell only shows what it found, marked
// with a "*" (not promised).
//
// Demoted brokers are checked too, always: once every plan is clean and
// nothing is unfinished, a demoted broker that is registered is the
// preferred leader of no partition that another live replica can lead.
func (s *soak) checkRacks(ctx context.Context, cl *clients, r *row) {
	imb, err := rackImbalance(ctx, cl.adm)
	if err == nil {
		var led []string
		led, err = demotedLeading(ctx, cl.adm, s.want.Cluster.DemoteBrokerIDs)
		if len(led) > 0 {
			r.set("racks", "FAIL", led...)
			return
		}
	}
	// A revert applies the configuration from before the step, after a
	// cancel that leaves the killed apply's finished moves in place: the
	// step's own new count promised the balance, the revert does not.
	promised := s.want.Cluster.KeepBalanced || (r.st.balances && r.st.other == nil && r.outs[0].code == 0 && !r.outs[0].revert)
	switch {
	case promised:
		r.set("racks", cell(imb), errOr(imb, err)...)
	case err != nil:
		r.set("racks", "?*")
	case len(imb) > 0:
		r.set("racks", "off*")
		s.logf("step %d: replicas uneven per rack, not promised here: %s", r.st.n, strings.Join(imb, "; "))
	default:
		r.set("racks", "ok*")
	}
}

// checkApplies judges each apply's outcome: an apply may fail only when a
// fault explains it.
func (s *soak) checkApplies(r *row) {
	var cells, problems []string
	for _, o := range r.outs {
		cells = append(cells, o.String())
		switch {
		case o.revert && o.code != 0:
			problems = append(problems, fmt.Sprintf("the revert in %s (the configuration applied before the kill) exited %d: %s", o.dir, o.code, o.err))
		case o.code != 0 && !o.killed && !o.revert && !faultExplains(r.st.fault):
			problems = append(problems, fmt.Sprintf("apply in %s exited %d without a fault to explain it: %s", o.dir, o.code, o.err))
		}
		if o.dir == "A" || o.dir == "B" {
			s.settled[o.dir] = o.code == 0 && !o.killed
		}
	}
	r.set("apply", strings.Join(cells, "/"), problems...)
}

// checkPlans runs terraform plan -detailed-exitcode in both working
// directories. A directory whose last apply succeeded, with no operation
// of its own unfinished, must plan no change; one with an unfinished
// operation must plan a change that names it (pending_operation); one
// whose apply was cut off may plan either, but "no changes" only with
// nothing unfinished. It reports whether both planned no change.
func (s *soak) checkPlans(r *row, unfinished []string) bool {
	clean := true
	for _, d := range []string{"A", "B"} {
		prefix := map[string]string{"A": "cluster/", "B": "topic/"}[d]
		var mine []string
		for _, u := range unfinished {
			if strings.HasPrefix(u, prefix) {
				mine = append(mine, u)
			}
		}
		code, out, err := s.dir(d).plan()
		s.logf("step %d: terraform plan in %s: exit %d\n%s", r.st.n, d, code, out)
		col := "plan" + d
		if d == "A" {
			// B's changes since A last settled may drift A, not only
			// this step's: seed 23's B change of step 35 showed in A's
			// plan only at step 36, once that step's dead broker was
			// back. An apply of A that succeeded answers those before it.
			if slices.ContainsFunc(r.outs, func(o outcome) bool { return o.dir == "A" && !o.killed && o.code == 0 }) {
				s.topicsTouched = false
			}
			s.topicsTouched = s.topicsTouched || r.touchedTopics()
			if err == nil && code == 0 {
				s.topicsTouched = false
			}
		}
		switch {
		case err != nil:
			r.set(col, "?", err.Error())
		case code == 1 && d == "A" && refusedForDead(out, s.dead):
			// A broker killed since (by a step of B's, say) makes A's
			// pending scale-out or removal of live brokers impossible,
			// and the plan says so, as documented: heal it first.
			r.set(col, "1:dead")
		case code == 1:
			r.set(col, "1", "terraform plan failed: "+firstError(out))
		case code == 0 && len(mine) > 0:
			r.set(col, "0", fmt.Sprintf("plans no change while %s is unfinished", strings.Join(mine, ", ")))
		case code == 0:
			s.settled[d] = true
			r.set(col, "0")
		case len(mine) > 0 && !strings.Contains(out, "pending_operation"):
			r.set(col, "2", fmt.Sprintf("plans a change but does not say %s is unfinished (no pending_operation)", strings.Join(mine, ", ")))
		case len(mine) > 0:
			// Unfinished: a paused apply exits 0, but the cluster is not at
			// the declared count, so no broker may be named yet.
			s.settled[d] = false
			r.set(col, "2:pending")
		case d == "A" && len(s.dead) > 0:
			r.set(col, "2:dead") // the plan heals the dead broker's partitions
		case d == "A" && (s.want.Cluster.KeepBalanced || len(s.want.Cluster.DemoteBrokerIDs) > 0) && s.topicsTouched:
			// keep_balanced answers a topic change that left the racks
			// uneven with a rebalance, as documented, and a demotion a
			// topic change that made a demoted broker a preferred leader
			// again (a topic's own operations do not know of it) with a
			// reorder: A has work again.
			s.settled[d] = false
			r.set(col, "2:drift")
		case d == "A" && s.want.Cluster.KeepBalanced && writeDrift(out):
			// The writes during the apply (the ledger and the Streams app
			// write hundreds of KiB/s to a cluster of tens of MiB) moved a
			// broker's bytes from the half of the limit the rebalance left
			// to just over it: keep_balanced asks again, as documented.
			s.settled[d] = false
			r.set(col, "2:drift")
			s.logf("step %d: A plans a rebalance for bytes written since the apply:\n%s", r.st.n, planSummary(out))
		case s.settled[d]:
			r.set(col, "2", "plans a change after a successful apply with nothing unfinished:\n"+planSummary(out))
		default:
			r.set(col, "2")
		}
		clean = clean && code == 0
	}
	return clean
}

// deadRe reads the dead brokers a refused change of brokers names.
var deadRe = regexp.MustCompile(`This change of brokers cannot be made.*brokers \[([0-9 ]+)\] are dead \(fenced or offline\)`)

// refusedForDead says whether the plan refused a change of brokers because
// of exactly the brokers the harness killed and has not brought back.
func refusedForDead(out string, dead []int32) bool {
	m := deadRe.FindStringSubmatch(strings.Join(strings.Fields(out), " "))
	if m == nil || len(dead) == 0 {
		return false
	}
	named := strings.Fields(m[1])
	if len(named) != len(dead) {
		return false
	}
	for _, id := range dead {
		if !slices.Contains(named, strconv.Itoa(int(id))) {
			return false
		}
	}
	return true
}

// skewRe reads the byte skew a keep_balanced plan warns of.
var skewRe = regexp.MustCompile(`bytes are ([0-9.]+)% from its share(?: \([^)]*\))?, above\s+max_disk_skew_percent ([0-9.]+)%`)

// writeDrift says whether the plan's only change is a rebalance in place
// for a byte skew within half again the limit: what writes do to a
// cluster that the last apply left at half the limit. A skew beyond that,
// or a rebalance for replica counts, is a plan the apply should have met.
func writeDrift(out string) bool {
	m := skewRe.FindStringSubmatch(strings.Join(strings.Fields(out), " "))
	if m == nil || !strings.Contains(out, "rebalances it in place") {
		return false
	}
	skew, err1 := strconv.ParseFloat(m[1], 64)
	limit, err2 := strconv.ParseFloat(m[2], 64)
	return err1 == nil && err2 == nil && skew <= 1.5*limit
}

// planSummary keeps what a plan says would change: the attributes that
// change (not the computed broker list, which every update shows unknown)
// and its warnings.
func planSummary(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		changed := (strings.HasPrefix(t, "~ ") || strings.HasPrefix(t, "+ ") || strings.HasPrefix(t, "- ")) &&
			strings.Contains(t, " = ") && !strings.Contains(t, "-> null") && !strings.HasPrefix(t, "~ brokers")
		if changed || strings.HasPrefix(t, "# ") {
			keep = append(keep, "      "+t)
		}
	}
	for _, w := range diagnostics(out, "Warning") {
		keep = append(keep, "      Warning: "+w)
	}
	return strings.Join(keep, "\n")
}

func (s *soak) checkOffline(ctx context.Context, cl *clients, r *row) {
	var off []string
	var err error
	// A partition whose leader just died is offline until the controller
	// elects another in-sync replica: give it a moment.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(time.Second) {
		off, err = offlinePartitions(ctx, cl.adm)
		if (err == nil && len(off) == 0) || time.Now().After(deadline) {
			break
		}
	}
	r.set("offline", cell(off), errOr(off, err)...)
}

// checkLeftovers checks that nothing of an operation is left: throttles,
// cordons, the lease. The provider waits until one broker shows a
// throttle gone; another may show it a moment longer.
func (s *soak) checkLeftovers(ctx context.Context, cl *clients, r *row, cordons bool) {
	running := s.runningBrokers()
	// A broker that was down when its operation finished or paused keeps
	// the rate the operation set (no other broker may clear it); the
	// record lists it as an orphaned throttle, every plan warns of it, and
	// the next apply of either directory removes it. Such a rate on a broker the
	// soak restarted since the last apply is not a leftover.
	pending := s.orphanedRestarted(ctx, cl)
	var th []string
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		th, err = throttlesSet(ctx, cl.adm, running)
		th = slices.DeleteFunc(th, func(t string) bool {
			var b int32
			_, serr := fmt.Sscanf(t, "broker %d ", &b)
			return serr == nil && pending[b]
		})
		if (err == nil && len(th) == 0) || time.Now().After(deadline) {
			break
		}
	}
	r.set("throttle", cell(th), errOr(th, err)...)
	if cordons {
		co, err := cordonsSet(ctx, cl.adm, running)
		r.set("cordon", cell(co), errOr(co, err)...)
	}
	lh, err := leaseHolders(ctx, cl.ks, time.Now())
	r.set("lease", cell(lh), errOr(lh, err)...)
}

func allPaused(unfinished []string) bool {
	for _, u := range unfinished {
		if !strings.HasSuffix(u, " paused") {
			return false
		}
	}
	return len(unfinished) > 0
}

// touchedTopics says whether the step changed topics (B applied).
func (r *row) touchedTopics() bool {
	return slices.ContainsFunc(r.outs, func(o outcome) bool { return o.dir == "B" })
}

// interrupted says whether an apply of the step was cut off or failed.
func (r *row) interrupted() bool {
	for _, o := range r.outs {
		if o.killed || o.code != 0 {
			return true
		}
	}
	return false
}

func errOr(found []string, err error) []string {
	if err != nil {
		return []string{"could not check: " + err.Error()}
	}
	if len(found) == 0 {
		return nil
	}
	return []string{strings.Join(found, "; ")}
}

// header and line render the table.
func header() string {
	return fmt.Sprintf("%-4s %-3s %-52s %-15s %6s  %-13s %-9s %-9s %-7s %-8s %-6s %-5s %-5s %-7s %s",
		"step", "dir", "action", "fault", "secs", "apply", "planA", "planB", "offline", "throttle", "cordon", "lease", "racks", "streams", "ledger")
}

func (r *row) line() string {
	c := func(k string) string {
		if v, ok := r.cells[k]; ok {
			return v
		}
		return "-"
	}
	action := r.st.action
	if r.st.other != nil {
		action += " || " + r.st.other.dir + ": " + r.st.other.action
	}
	out := fmt.Sprintf("%-4d %-3s %-52s %-15s %6.1f  %-13s %-9s %-9s %-7s %-8s %-6s %-5s %-5s %-7s %s",
		r.st.n, r.st.dir, short(action, 52), r.st.fault, r.secs, c("apply"), c("planA"), c("planB"), c("offline"),
		c("throttle"), c("cordon"), c("lease"), c("racks"), c("streams"), c("ledger"))
	slices.Sort(r.problems)
	for _, p := range r.problems {
		out += fmt.Sprintf("\n     VIOLATION seed=%d step=%d %s", r.seed, r.st.n, p)
	}
	return out
}

// orphanedRestarted are the brokers restarted since the last apply whose
// throttle rate a finished or paused operation still lists (checkLeftovers).
func (s *soak) orphanedRestarted(ctx context.Context, cl *clients) map[int32]bool {
	out := map[int32]bool{}
	if len(s.restarted) == 0 {
		return out
	}
	ops, err := cl.ks.Operations().List(ctx)
	if err != nil {
		return out
	}
	for _, o := range executor.OrphanedThrottles(ops) {
		for _, b := range o.Brokers {
			if s.restarted[b] {
				out[b] = true
			}
		}
	}
	return out
}
