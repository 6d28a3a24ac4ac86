package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/report"
)

// reportFlags are what `kafkascale report` is asked for: a plan preview
// (brokerCount) or a recorded operation.
type reportFlags struct {
	brokerCount int
	remove      []int32
	operation   string
	options     engine.Options
	out         string
	format      outputFormat
}

func newReportCommand(conn *connFlags, stdout, stderr io.Writer) *cobra.Command {
	f := reportFlags{options: engine.DefaultOptions()}
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write an HTML page of a plan preview or of a recorded operation",
		Long: "report writes one self-contained HTML page (charts inlined, nothing fetched when it opens) of:\n\n" +
			"  a plan preview, with --broker-count N [--remove-broker-ids …]: the same choice of brokers and the same plan " +
			"as data.kafkascale_rebalance_plan, from the cluster as it is now. Limits not given take the provider's defaults;\n" +
			"  a recorded operation, with --operation ID|KEY (see `kafkascale operations`), running or over.\n\n" +
			"It shows per broker, grouped by rack, the replicas, preferred leaders and bytes before and after; the moves per " +
			"receiving broker, per broker pair and per group; and for an operation, the bytes each broker received over time " +
			"against the throttle, the ETA at each moment against the actual end, and the phases. Each chart has its numbers " +
			"in a table below it. --output json prints the data behind the page instead. It only reads the cluster.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (f.brokerCount > 0) == (f.operation != "") {
				return errors.New("name what to report: --broker-count N for a plan preview, or --operation ID|KEY for a recorded operation")
			}
			if err := f.options.Validate(); err != nil {
				return err
			}
			d, err := f.data(cmd.Context(), conn)
			if err != nil {
				return err
			}
			return f.write(d, stdout, stderr)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.brokerCount, "broker-count", 0, "preview the plan to this broker count, as data.kafkascale_rebalance_plan does")
	fs.Int32SliceVar(&f.remove, "remove-broker-ids", nil, "as remove_broker_ids: the brokers to drain (a scale-in) or replace (the count unchanged)")
	fs.StringVar(&f.operation, "operation", "", "report the recorded operation with this id or key")
	fs.Int64Var(&f.options.ThrottleBytesPerSec, "throttle", f.options.ThrottleBytesPerSec, "replication throttle of the preview's estimate, bytes/s per broker")
	fs.IntVar(&f.options.MaxMovesPerStep, "max-moves-per-step", f.options.MaxMovesPerStep, "as rebalance.max_moves_per_step")
	fs.IntVar(&f.options.MaxMovesPerBroker, "max-moves-per-broker", f.options.MaxMovesPerBroker, "as rebalance.max_moves_per_broker")
	fs.Float64Var(&f.options.MinFreeDiskPercent, "min-free-disk-percent", f.options.MinFreeDiskPercent, "as rebalance.min_free_disk_percent")
	fs.Float64Var(&f.options.MaxDiskSkewPercent, "max-disk-skew-percent", f.options.MaxDiskSkewPercent, "as rebalance.max_disk_skew_percent")
	fs.StringVar(&f.options.Awareness.Separator, "awareness-separator", "", "as rebalance.awareness.separator")
	fs.StringSliceVar(&f.options.Awareness.Dimensions, "awareness-dimensions", nil, "as rebalance.awareness.dimensions, comma-separated")
	fs.StringVar(&f.out, "out", "", "write to this file instead of stdout")
	registerOutput(fs, &f.format)
	return cmd
}

// data reads what the page shows: the preview or the record.
func (f *reportFlags) data(ctx context.Context, conn *connFlags) (report.Data, error) {
	if f.operation != "" {
		ops, err := conn.readOperations(ctx)
		if err != nil {
			return report.Data{}, err
		}
		op, err := findOperation(ops, f.operation)
		if err != nil {
			return report.Data{}, err
		}
		return report.FromOperation(op, time.Now()), nil
	}
	cl, err := conn.connect()
	if err != nil {
		return report.Data{}, err
	}
	defer cl.Close()
	snap, err := cl.Snapshot(ctx)
	if err != nil {
		return report.Data{}, err
	}
	// The data source's preview: PreviewCost standalone, from the
	// cluster as read, the last operation's measured timings in the ETA.
	ex := executor.New(executor.Deps{Kafka: cl.Port(), Store: cl.Operations()}, executor.Settings{})
	c, err := ex.PreviewCost(ctx, executor.CostRequest{Key: executor.ClusterKey(snap.ClusterID), Target: f.brokerCount,
		Remove: f.remove, Options: f.options, Standalone: true, Live: func() engine.Cluster { return kafka.EngineCluster(snap) }})
	if err != nil {
		return report.Data{}, fmt.Errorf("planning %d brokers: %w", f.brokerCount, err)
	}
	return report.FromPreview(snap.ClusterID, f.brokerCount, c, time.Now()), nil
}

// write prints d as JSON or as the page, to --out or stdout.
func (f *reportFlags) write(d report.Data, stdout, stderr io.Writer) (err error) {
	w := stdout
	if f.out != "" {
		// A report, not a secret: readable as a page is.
		file, err := os.OpenFile(f.out, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644) //nolint:gosec
		if err != nil {
			return err
		}
		defer func() {
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}()
		w = file
	}
	if f.format == outputJSON {
		err = writeJSON(w, d)
	} else {
		err = report.Render(w, d)
	}
	if err != nil {
		return err
	}
	if f.out != "" {
		fmt.Fprintf(stderr, "wrote %s\n", f.out)
	}
	return nil
}
