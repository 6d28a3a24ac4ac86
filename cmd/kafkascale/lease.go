package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

func newLeaseCommand(conn *connFlags, stdout io.Writer) *cobra.Command {
	var format outputFormat
	cmd := &cobra.Command{
		Use:   "lease",
		Short: "Show who holds the cluster's operation lease, since when, and for which operation",
		Long: "lease reads the cluster's operation lease (the log in " + kafka.LeaseTopic + ") as the provider does, and shows " +
			"the claim that holds it: the operation, the Terraform resource that runs it, the host and process, " +
			"since when, its last heartbeat and when it expires unless it heartbeats again; then the claims " +
			"waiting behind it, in the order they take it. An apply that waits for the lease waits for these. " +
			"It only reads: it claims nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := conn.connect()
			if err != nil {
				return err
			}
			defer cl.Close()
			now := time.Now()
			st, err := readLease(cmd.Context(), cl.LeaseLog(), now)
			if err != nil {
				return err
			}
			if format == outputJSON {
				return writeJSON(stdout, leaseView(st, now))
			}
			writeLease(stdout, st, now)
			return nil
		},
	}
	registerOutput(cmd.Flags(), &format)
	return cmd
}

// leaseReader is the part of the lease log the command reads.
type leaseReader interface {
	Since(ctx context.Context, t time.Time) ([]executor.LeaseRecord, error)
}

// readLease replays the window of the lease log that decides the lease, as
// every contender does.
func readLease(ctx context.Context, log leaseReader, now time.Time) (executor.LeaseState, error) {
	recs, err := log.Since(ctx, now.Add(-executor.LeaseWindow))
	if err != nil {
		return executor.LeaseState{}, err
	}
	return executor.ReplayLease(recs), nil
}

// claimSince is when a claim started: its claim record's time, or, when
// that record is older than the window read, when its process started to
// claim.
func claimSince(c executor.LeaseClaim) time.Time {
	if !c.Claimed.IsZero() {
		return c.Claimed
	}
	return c.Holder.Started
}

// overdue says that a claim's last record is older than its expiry by
// now: the next record in the log ends it. The lease is judged on the
// brokers' clock, so this is this machine's reading of it.
func overdue(c executor.LeaseClaim, now time.Time) bool { return now.After(c.Expires()) }

// writeLease prints the holder and the queue behind it.
func writeLease(w io.Writer, st executor.LeaseState, now time.Time) {
	q := st.Queue()
	if len(q) == 0 {
		fmt.Fprintln(w, "no one holds the cluster's operation lease, and no claim waits for it")
		return
	}
	h := q[0]
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("held by", fmt.Sprintf("operation %s (%s)", orDash(h.Holder.Operation), orDash(h.Holder.What)))
	row("resource", orDash(h.Holder.Resource))
	row("run by", fmt.Sprintf("host %s pid %d", orDash(h.Holder.Host), h.Holder.PID))
	row("since", formatTime(claimSince(h)))
	row("last heartbeat", formatTime(h.LastSeen))
	expires := formatTime(h.Expires()) + " unless it heartbeats again"
	if overdue(h, now) {
		expires = formatTime(h.Expires()) + ": overdue, the next claim ends it"
	}
	row("expires", expires)
	if !h.Holding {
		// First in the queue, and has not yet announced it holds the
		// lease: it starts its operation once it has.
		row("state", "taking the lease")
	}
	row("claim", h.ID)
	_ = tw.Flush()
	if len(q) == 1 {
		fmt.Fprintln(w, "\nno claim waits behind it")
		return
	}
	fmt.Fprintf(w, "\nwaiting, in the order they take the lease (%d):\n", len(q)-1)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  OPERATION\tRESOURCE\tWHAT\tHOST\tPID\tSINCE")
	for _, c := range q[1:] {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\n", orDash(c.Holder.Operation), orDash(c.Holder.Resource),
			orDash(c.Holder.What), orDash(c.Holder.Host), c.Holder.PID, formatTime(claimSince(c)))
	}
	_ = tw.Flush()
}

// claimJSON is one claim in `lease --output json`: the claimant's own
// facts as its records carry them (operation, resource, what, host, pid,
// session, started), and what the replay makes of them.
type claimJSON struct {
	Claim string `json:"claim"`
	executor.LeaseHolder
	Since         time.Time `json:"since"`
	LastHeartbeat time.Time `json:"last_heartbeat"`
	Expires       time.Time `json:"expires"`
	// Overdue: the last record is older than the expiry by this
	// machine's clock; the next record in the log ends the claim.
	Overdue bool `json:"overdue"`
	// Holding: the claim announced that it holds the lease.
	Holding bool `json:"holding"`
}

type leaseJSON struct {
	// Holder is null when no claim lives.
	Holder  *claimJSON  `json:"holder"`
	Waiting []claimJSON `json:"waiting"`
}

func leaseView(st executor.LeaseState, now time.Time) leaseJSON {
	out := leaseJSON{Waiting: []claimJSON{}}
	for i, c := range st.Queue() {
		j := claimJSON{Claim: c.ID, LeaseHolder: c.Holder, Since: claimSince(c).UTC(),
			LastHeartbeat: c.LastSeen.UTC(), Expires: c.Expires().UTC(), Overdue: overdue(c, now), Holding: c.Holding}
		if i == 0 {
			out.Holder = &j
			continue
		}
		out.Waiting = append(out.Waiting, j)
	}
	return out
}
