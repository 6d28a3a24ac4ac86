package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

// formatBytes writes a byte count in IEC units with one decimal.
func formatBytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	v, i := float64(b), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func joinComma(ss []string) string { return strings.Join(ss, ", ") }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens a message to n runes on one line, for the list; show
// prints it whole.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// sortOperations puts unfinished operations first, then the most recently
// started, then by key.
func sortOperations(ops []*executor.Operation) []*executor.Operation {
	out := slices.Clone(ops)
	slices.SortStableFunc(out, func(a, b *executor.Operation) int {
		if a.Done() != b.Done() {
			if a.Done() {
				return 1
			}
			return -1
		}
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

// groupOf is "i/n", "-" before the plan exists.
func groupOf(p executor.Progress) string {
	if p.Groups == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", p.Group, p.Groups)
}

// writeOperations lists every operation on one line each, then the
// orphaned throttles.
func writeOperations(w io.Writer, ops []*executor.Operation) {
	if len(ops) == 0 {
		fmt.Fprintln(w, "no operation is recorded on this cluster")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tKIND\tPHASE\tGROUP\tMOVES\tBYTES\tSTARTED\tUPDATED\tLAST ERROR")
	for _, op := range sortOperations(ops) {
		// The record's own figures: a list reads no replica sizes.
		p := op.Progress(nil)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s/%s\t%s\t%s\t%s\n",
			op.ID, op.Key, op.Kind, phaseOf(op), groupOf(p), p.MovesDone, p.Moves,
			formatBytes(p.BytesDone), formatBytes(p.Bytes), formatTime(op.StartedAt), formatTime(op.UpdatedAt),
			orDash(oneLine(op.LastError, 80)))
	}
	_ = tw.Flush()
	if orphans := executor.OrphanedThrottles(ops); len(orphans) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "orphaned throttles (set by operations that are over; the next apply of any kafkascale resource removes them):")
		for _, o := range orphans {
			fmt.Fprintln(w, "  "+o.String())
		}
	}
}

// phaseOf is an operation's phase for a list, marked when an apply paused
// it at max_apply_duration: it waits for the next apply, not for Kafka.
func phaseOf(op *executor.Operation) string {
	if op.Paused() {
		return string(op.Phase) + " (paused)"
	}
	return string(op.Phase)
}

// writeOperation prints one operation's whole record.
func writeOperation(w io.Writer, op *executor.Operation) {
	p := op.Progress(nil)
	ids := func(bs []int32) string {
		if len(bs) == 0 {
			return "-"
		}
		return strings.Trim(fmt.Sprint(bs), "[]")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("operation", op.ID)
	row("key", op.Key)
	row("kind", string(op.Kind))
	phase := string(op.Phase)
	if op.Phase == executor.PhaseReassign && p.Groups > 0 {
		phase += fmt.Sprintf(" (group %d/%d, %d step(s) of it submitted)", p.Group, p.Groups, op.StepsSubmitted)
	}
	if op.Paused() {
		phase += fmt.Sprintf(", paused at max_apply_duration since %s: the next apply continues", formatTime(op.PausedAt))
	}
	row("phase", phase)
	if op.TargetBrokerCount > 0 {
		row("target brokers", fmt.Sprint(op.TargetBrokerCount))
	}
	row("brokers before", ids(op.BrokersBefore))
	row("removing brokers", ids(op.RemoveBrokers))
	if len(op.DeadBrokers) > 0 || len(op.ReusedBrokers) > 0 {
		row("dead brokers", ids(op.DeadBrokers))
		row("reused brokers", ids(op.ReusedBrokers))
	}
	row("started", formatTime(op.StartedAt))
	row("updated", formatTime(op.UpdatedAt))
	row("completed", formatTime(op.CompletedAt))
	row("progress", fmt.Sprintf("moves %d/%d, bytes %s/%s (moves done)", p.MovesDone, p.Moves, formatBytes(p.BytesDone), formatBytes(p.Bytes)))
	if p.ETA > 0 {
		remaining := fmt.Sprintf("~%s at the throttle in force", p.ETA.Round(time.Second))
		if p.Projected > 0 {
			remaining = fmt.Sprintf("~%s at the pace the copy has kept (as of %s); %s", p.Projected.Round(time.Second), formatTime(p.ProjectedAt), remaining)
		}
		row("remaining", remaining)
	}
	throttle := "none"
	if op.ThrottleRate > 0 {
		throttle = fmt.Sprintf("%s/s per broker (the rate in force)", formatBytes(op.ThrottleRate))
	}
	row("throttle", throttle)
	for _, c := range op.ThrottleHistory {
		row("throttle changed", fmt.Sprintf("%s: %s/s -> %s/s (%s)", c.At.Format(time.RFC3339), formatBytes(c.From), formatBytes(c.To), c.Reason))
	}
	row("throttled brokers", ids(op.ThrottledBrokers))
	for _, t := range op.ThrottledReplicas {
		row("throttled replicas", fmt.Sprintf("topic %s: %d leader, %d follower entries", t.Topic, len(t.Leader), len(t.Follower)))
	}
	row("last error", orDash(op.LastError))
	_ = tw.Flush()

	if op.Plan == nil {
		fmt.Fprintln(w, "\nplan: not made yet (it is made once the new brokers have registered)")
		return
	}
	pl := op.Plan
	details := ""
	if pl.ThrottleBytesPerSec > 0 {
		details = fmt.Sprintf(", estimated %s at %s/s", time.Duration(pl.EstimatedSeconds)*time.Second, formatBytes(pl.ThrottleBytesPerSec))
	}
	if pl.GroupsInTurn {
		// The planner found the groups one after another faster than
		// the continuous schedule for this plan.
		details += ", its groups run in turn"
	}
	fmt.Fprintf(w, "\nplan: %d move(s) in %d group(s), %s to copy%s, %d leader reorder(s)\n",
		p.Moves, len(pl.Groups), formatBytes(pl.TotalBytes), details, len(pl.Reorders))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  GROUP\tMOVES\tBYTES\tBUSIEST BROKER\tSTATE")
	for i, g := range pl.Groups {
		fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\n", i+1, len(g.Moves()), formatBytes(g.Bytes), formatBytes(g.BusiestBrokerBytes), groupState(op, i))
	}
	_ = tw.Flush()
	if len(pl.Brokers) > 0 {
		fmt.Fprintln(w, "\nbrokers (before -> after):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  BROKER\tRACK\tREPLICAS\tPREFERRED LEADERS\tBYTES\tNOTE")
		for _, b := range pl.Brokers {
			note := ""
			switch {
			case b.Added:
				note = "added"
			case b.Removed:
				note = "removed"
			case !b.Alive:
				note = "not alive"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%d -> %d\t%d -> %d\t%s -> %s\t%s\n", b.Broker, orDash(b.Rack),
				b.Before.Replicas, b.After.Replicas, b.Before.Leaders, b.After.Leaders,
				formatBytes(b.Before.Bytes), formatBytes(b.After.Bytes), note)
		}
		_ = tw.Flush()
	}
	if len(pl.Warnings) > 0 {
		fmt.Fprintln(w, "\nplan warnings:")
		for _, s := range pl.Warnings {
			fmt.Fprintln(w, "  - "+s)
		}
	}
}

// groupStatus is where one group of the plan stands.
type groupStatus struct {
	// state is done, running, pending or not-run (the operation ended
	// before the group ran).
	state string
	// started counts a running group's moves submitted (a record from
	// before moves were recorded one by one is read as its group's moves
	// started: executor.DecodeOperation).
	started int
}

// statusOf says where group i of op's plan stands.
func statusOf(op *executor.Operation, i int) groupStatus {
	switch {
	case i < op.Group:
		return groupStatus{state: "done"}
	case op.Done():
		return groupStatus{state: "not-run"}
	case i >= op.Group && op.Phase == executor.PhaseReassign && op.StartedIn(i) > 0:
		return groupStatus{state: "running", started: op.StartedIn(i)}
	default:
		return groupStatus{state: "pending"}
	}
}

// groupState says where group i stands, for people.
func groupState(op *executor.Operation, i int) string {
	st := statusOf(op, i)
	switch st.state {
	case "not-run":
		return "not run (" + string(op.Phase) + ")"
	case "running":
		return fmt.Sprintf("running (%d of %d moves started)", st.started, len(op.Plan.Groups[i].Moves()))
	default:
		return st.state
	}
}
