//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
)

// flakyAPI is the scaling API that, while failing, answers every request
// with a 503 as an overloaded platform would; kafkatest.ScalingAPI has no
// fault of its own.
type flakyAPI struct {
	h     http.Handler
	until atomic.Int64 // unix nanoseconds
}

func (f *flakyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if time.Now().UnixNano() < f.until.Load() {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"the scaling API is failing on purpose (soak fault api-fail)"}` + "\n"))
		return
	}
	f.h.ServeHTTP(w, r)
}

func (f *flakyAPI) failFor(d time.Duration) { f.until.Store(time.Now().Add(d).UnixNano()) }

// outcome is how one terraform apply ended.
type outcome struct {
	dir    string
	code   int
	killed bool
	revert bool   // the apply of the configuration from before a kill
	err    string // terraform's first error line
}

func (o outcome) String() string {
	switch {
	case o.killed:
		return "killed"
	case o.revert && o.code == 0:
		return "killed,ok"
	case o.revert:
		return fmt.Sprintf("killed,exit %d", o.code)
	case o.code == 0:
		return "ok"
	}
	return fmt.Sprintf("exit %d", o.code)
}

// writeConfigs writes both working directories' main.tf from the model,
// with the running brokers as bootstrap servers.
func (s *soak) writeConfigs() error {
	servers := s.c.BootstrapServers()
	if err := s.a.configure(clusterHCL(servers, s.apiURL, apiToken, s.want.Cluster)); err != nil {
		return err
	}
	return s.b.configure(topicsHCL(servers, s.want.Topics, s.want.TopicsTimeout) +
		streamsHCL(s.want.StreamsPartitions, s.want.TopicsTimeout))
}

func (s *soak) dir(name string) *workdir {
	if name == "A" {
		return s.a
	}
	return s.b
}

// applyChange applies st's change to the model, the update timeout of its
// working directory reset (a timeout fault shortens it again).
func (s *soak) applyChange(st *step) {
	s.setTimeout(st.dir, longTimeout)
	st.change(&s.want)
}

// setTimeout sets the update timeout of working directory dir's
// configuration. The other directory's stays what its state holds: a
// change to it would show in that directory's next plan.
func (s *soak) setTimeout(dir, timeout string) {
	switch dir {
	case "A":
		s.want.Cluster.UpdateTimeout = timeout
	case "B":
		s.want.TopicsTimeout = timeout
	}
}

// execute runs st: the applies, and the fault at its delay. It returns
// every apply's outcome, the step's own first.
func (s *soak) execute(ctx context.Context, st *step) ([]outcome, error) {
	if st.dir == "-" {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if err := s.c.RestartBroker(rctx, st.restart); err != nil {
			return []outcome{{dir: "-", code: 1, err: err.Error()}}, nil
		}
		s.dead = slices.DeleteFunc(s.dead, func(id int32) bool { return id == st.restart })
		s.restarted[st.restart] = true
		return []outcome{{dir: "-"}}, nil
	}
	// An apply removes the throttles finished operations left
	// (orphanedRestarted).
	clear(s.restarted)
	prev := s.want.clone()
	s.applyChange(st)
	if st.fault == faultTimeout || st.fault == faultTimeoutRevert {
		s.setTimeout(st.dir, "3s")
	}
	if st.other != nil {
		s.applyChange(st.other)
	}
	if err := s.writeConfigs(); err != nil {
		return nil, err
	}
	main, err := s.dir(st.dir).start("apply", "-auto-approve")
	if err != nil {
		return nil, err
	}
	runs := []*run{main}
	if st.other != nil {
		r, err := s.dir(st.other.dir).start("apply", "-auto-approve")
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	killed := s.inject(ctx, st, main)
	outs := make([]outcome, len(runs))
	for i, r := range runs {
		code, out := r.wait()
		d := st.dir
		if i > 0 {
			d = st.other.dir
		}
		outs[i] = outcome{dir: d, code: code, killed: i == 0 && killed, err: firstError(out)}
		s.logf("step %d: terraform apply in %s: %s\n%s", st.n, d, outs[i], out)
	}
	if reverts(st.fault) && (killed || outs[0].code != 0) {
		// The configuration from before the step, with the long timeout in
		// the step's directory: prev may keep a timeout fault's 3 s from an
		// earlier step, and a revert must wait out the killed apply's
		// lease. The other directory keeps its own (soak seed 28: setting
		// both made B's next plan show B's timeouts changing, after a
		// revert in A).
		next := s.want.clone()
		s.want = prev
		s.setTimeout(st.dir, longTimeout)
		code, out, err := s.applyWanted(st, "revert")
		if err != nil {
			return nil, err
		}
		if code != 0 && shrinkRefused(out) {
			// The killed apply had added partitions, and Kafka cannot
			// remove them: the plan refuses the revert with that rule,
			// naming the attribute. An operator then keeps the count the
			// topic has, which is the step's own: apply that.
			s.want = next
			s.setTimeout(st.dir, longTimeout)
			if code, out, err = s.applyWanted(st, "roll-forward"); err != nil {
				return nil, err
			}
		}
		outs[0] = outcome{dir: st.dir, code: code, revert: true, err: firstError(out)}
	}
	return outs, nil
}

// applyWanted writes the model's configuration and applies it in the
// step's working directory.
func (s *soak) applyWanted(st *step, what string) (int, string, error) {
	if err := s.writeConfigs(); err != nil {
		return 0, "", err
	}
	code, out, err := s.dir(st.dir).exec("apply", "-auto-approve")
	if err == nil {
		s.logf("step %d: %s apply in %s: exit %d\n%s", st.n, what, st.dir, code, out)
	}
	return code, out, err
}

// shrinkRefused says whether a plan failed on Kafka's rule that a topic's
// partitions cannot be removed (a revert of a growth that took effect).
// kafkascale_streams_app and kafkascale_topic both say it in the engine's
// words; before they did, seed 28 missed the topic's wording and every
// later plan of B failed.
func shrinkRefused(out string) bool {
	flat := strings.Join(strings.Fields(out), " ")
	return strings.Contains(flat, engine.NoShrinkRule)
}

// inject waits for the fault's moment and strikes, unless the apply ended
// first. It reports whether it SIGKILLed the apply.
func (s *soak) inject(ctx context.Context, st *step, apply *run) bool {
	switch st.fault {
	case faultNone, faultTimeout, faultTimeoutRevert, faultConcurrent:
		return false
	case faultAPIFail:
		s.api.failFor(st.outage)
		return false
	}
	select {
	case <-apply.exited:
		s.logf("step %d: the apply ended before the %s fault at %s", st.n, st.fault, st.delay)
		st.fault += "(late)"
		return false
	case <-ctx.Done():
		return false
	case <-time.After(st.delay):
	}
	switch st.fault {
	case faultSIGKILL, faultRevert:
		apply.kill()
		return true
	case faultBrokerKill:
		running := s.runningBrokers()
		if len(running) == 0 {
			return false
		}
		id := running[st.victim%len(running)]
		if err := s.c.KillBroker(id); err != nil {
			s.logf("step %d: killing broker %d: %v", st.n, id, err)
			return false
		}
		s.dead = append(s.dead, id)
		s.logf("step %d: broker %d killed", st.n, id)
	case faultControllerKill:
		old, err := s.c.KillActiveController(ctx)
		if err != nil {
			s.logf("step %d: killing the active controller: %v", st.n, err)
			return false
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		now, err := s.c.WaitNewActiveController(wctx, old)
		s.logf("step %d: active controller %d killed; new leader %d (%v)", st.n, old, now, err)
	}
	return false
}

// reverts says whether the fault applies the configuration from before
// the step right after the interruption.
func reverts(fault string) bool { return fault == faultRevert || fault == faultTimeoutRevert }

func (s *soak) runningBrokers() []int32 {
	var ids []int32
	for _, b := range s.c.Brokers() {
		if b.Running {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// syncBrokers reads the registered brokers into the model, and forgets
// dead brokers that a step removed.
func (s *soak) syncBrokers() {
	s.brokerIDs = s.brokerIDs[:0]
	for _, b := range s.c.Brokers() {
		s.brokerIDs = append(s.brokerIDs, b.ID)
	}
	s.dead = slices.DeleteFunc(s.dead, func(id int32) bool { return !slices.Contains(s.brokerIDs, id) })
}

// faultExplains says whether a failed apply is what the fault should
// cause, rather than a broken path: a cut-off apply, a dead node, a failing
// scaling API. A concurrent apply must wait for the lease, not fail.
func faultExplains(fault string) bool {
	return fault != faultNone && fault != faultConcurrent && !strings.HasSuffix(fault, "(late)")
}

func cell(problems []string) string {
	if len(problems) == 0 {
		return "ok"
	}
	return "FAIL"
}

func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
