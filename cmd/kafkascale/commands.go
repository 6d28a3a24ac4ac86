package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
)

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	var conn connFlags
	root := &cobra.Command{
		Use:   "kafkascale",
		Short: "Follow the operations the kafkascale Terraform provider runs on a Kafka cluster",
		Long: "kafkascale reads the operations the kafkascale provider records in " +
			"__kafkascale_operations, and the live cluster, from any machine that can reach it: " +
			"also while an apply elsewhere holds the Terraform state lock. It never writes to the cluster. " +
			"lease shows who holds the cluster's operation lease that an apply may be waiting for. " +
			"import-config writes Terraform configuration that adopts existing topics and the cluster. " +
			"report writes an HTML page of a plan preview or of a recorded operation. " +
			"operations, operation show, watch, lease and report take --output json for scripts; " +
			"`kafkascale completion --help` sets up shell completion.",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	conn.register(root.PersistentFlags())

	root.AddCommand(newOperationsCommand(&conn, stdout))
	root.AddCommand(newOperationCommand(&conn, stdout))
	root.AddCommand(newWatchCommand(&conn, stdout))
	root.AddCommand(newLeaseCommand(&conn, stdout))
	root.AddCommand(newImportConfigCommand(&conn, stdout, stderr))
	root.AddCommand(newReportCommand(&conn, stdout, stderr))
	return root
}

func newOperationsCommand(conn *connFlags, stdout io.Writer) *cobra.Command {
	var format outputFormat
	cmd := &cobra.Command{
		Use:   "operations",
		Short: "List every recorded operation, unfinished ones first, then orphaned throttles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ops, err := conn.readOperations(cmd.Context())
			if err != nil {
				return err
			}
			if format == outputJSON {
				return writeOperationsJSON(stdout, ops)
			}
			writeOperations(stdout, ops)
			return nil
		},
	}
	registerOutput(cmd.Flags(), &format)
	return cmd
}

func newOperationCommand(conn *connFlags, stdout io.Writer) *cobra.Command {
	var format outputFormat
	show := &cobra.Command{
		Use:   "show ID|KEY",
		Short: "Show an operation's whole record: plan groups, throttle, brokers and errors",
		Long: "show prints the record of the operation whose id or key is given (both are listed by " +
			"`kafkascale operations`; a key names the last operation under it).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, err := conn.readOperations(cmd.Context())
			if err != nil {
				return err
			}
			op, err := findOperation(ops, args[0])
			if err != nil {
				return err
			}
			if format == outputJSON {
				return writeOperationJSON(stdout, op)
			}
			writeOperation(stdout, op)
			return nil
		},
	}
	registerOutput(show.Flags(), &format)
	operation := &cobra.Command{Use: "operation", Short: "Inspect one operation"}
	operation.AddCommand(show)
	return operation
}

func newWatchCommand(conn *connFlags, stdout io.Writer) *cobra.Command {
	var key, serveOn string
	var interval time.Duration
	var format outputFormat
	watch := &cobra.Command{
		Use:   "watch [ID|KEY]",
		Short: "Follow the running operation until it ends",
		Long: "watch follows the unfinished operation (with several, name one by its id or key) and shows " +
			"the bytes copied, the rate, the group and the ETA: as a progress bar on a terminal, as plain lines " +
			"when its output is a pipe or a file (a line whenever the copy moves, and at least once a minute), " +
			"and as one JSON object a line with --output json. It exits when the operation ends: 0 when it " +
			"completed, 1 when it was abandoned or cancelled. With no unfinished operation it says so, and " +
			"exits 0 when the last one completed.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel := key
			if len(args) == 1 {
				if key != "" && key != args[0] {
					return fmt.Errorf("name the operation once: --key %q and %q", key, args[0])
				}
				sel = args[0]
			}
			cl, err := conn.connect()
			if err != nil {
				return err
			}
			defer cl.Close()
			w := &watcher{src: clientSource{feed: cl.FollowOperations(), port: cl.Port()},
				view: newView(stdout, format, interval), interval: interval, now: time.Now}
			if serveOn != "" {
				return watchServing(cmd.Context(), w, sel, serveOn, cmd.ErrOrStderr())
			}
			return w.run(cmd.Context(), sel)
		},
	}
	watch.Flags().StringVar(&serveOn, "serve", "", "also serve the operation's report page at this address (PORT or HOST:PORT; "+
		"the host is 127.0.0.1 unless given), read-only and reloading itself while the operation runs; once it has ended "+
		"the page stays until interrupted")
	watch.Flags().StringVar(&key, "key", "", "the key (or id) of the operation to follow, as the argument does (see `kafkascale operations`)")
	watch.Flags().DurationVar(&interval, "interval", time.Second, "how often to read the operation and the cluster")
	registerOutput(watch.Flags(), &format)
	return watch
}

func newImportConfigCommand(conn *connFlags, stdout, stderr io.Writer) *cobra.Command {
	var prefix, expr, out string
	var includeInternal, withCluster bool
	cmd := &cobra.Command{
		Use:   "import-config",
		Short: "Write import blocks and resources for existing topics and the cluster",
		Long: "import-config writes Terraform configuration (1.5 or later) that adopts existing topics: for every topic " +
			"matching --prefix and --regex (a Go regular expression, unanchored), an import block and a kafkascale_topic " +
			"with its partitions, replication factor and own configs, as the provider reads them back, so that the plan " +
			"shows imports and no change. With --cluster (the default) it also writes the kafkascale_cluster at its broker " +
			"count, with `scaling { external {} }` and a TODO: the scaling method cannot be read from Kafka.\n\n" +
			"Left out unless --include-internal: topics starting with __ (such as __kafkascale_operations) and Kafka " +
			"Streams internal topics (-changelog, -repartition, foreign-key -SUBSCRIPTION- topics), which Streams " +
			"creates and kafkascale_streams_app grows. Kafka's own internal topics (__consumer_offsets, " +
			"__transaction_state) are never written. It only reads the cluster.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sel, err := newSelector(prefix, expr, includeInternal)
			if err != nil {
				return err
			}
			cl, err := conn.connect()
			if err != nil {
				return err
			}
			defer cl.Close()
			described, err := cl.DescribeTopics(cmd.Context(), nil)
			if err != nil {
				return err
			}
			topics := make([]kafka.TopicDescription, 0, len(described))
			for _, t := range described {
				topics = append(topics, t)
			}
			var cluster *clusterImport
			if withCluster {
				desc, err := cl.DescribeCluster(cmd.Context())
				if err != nil {
					return err
				}
				cluster = &clusterImport{id: desc.ClusterID, brokerCount: len(desc.Brokers)}
			}
			ic := generateImportConfig(topics, sel, cluster, importCommandLine(prefix, expr, includeInternal, withCluster))
			if ic.topics == 0 && !withCluster {
				return fmt.Errorf("no topic matches --prefix %q --regex %q: nothing to write", prefix, expr)
			}
			dest := "stdout"
			if out == "" {
				if _, err := stdout.Write(ic.hcl); err != nil {
					return err
				}
			} else {
				// Configuration, not a secret: readable as a .tf file is.
				if err := os.WriteFile(out, ic.hcl, 0o644); err != nil { //nolint:gosec
					return err
				}
				dest = out
			}
			reportImportConfig(stderr, ic, dest, withCluster)
			return nil
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "", "write the topics whose names start with this")
	cmd.Flags().StringVar(&expr, "regex", "", "write the topics whose names match this Go regular expression (unanchored; with --prefix, both must match)")
	cmd.Flags().BoolVar(&includeInternal, "include-internal", false, "also write topics starting with __ and Kafka Streams internal topics")
	cmd.Flags().BoolVar(&withCluster, "cluster", true, "also write the kafkascale_cluster block (--cluster=false leaves it out)")
	cmd.Flags().StringVar(&out, "out", "", "write to this file instead of stdout")
	return cmd
}

// importCommandLine is the command line recorded in the generated file's
// header, connection flags left out: they may hold secrets.
func importCommandLine(prefix, expr string, includeInternal, withCluster bool) string {
	s := "kafkascale import-config"
	if prefix != "" {
		s += " --prefix " + strconv.Quote(prefix)
	}
	if expr != "" {
		s += " --regex " + strconv.Quote(expr)
	}
	if includeInternal {
		s += " --include-internal"
	}
	if !withCluster {
		s += " --cluster=false"
	}
	return s
}

// findOperation returns the operation whose id or key is sel, or an error
// that lists the ones there are.
func findOperation(ops []*executor.Operation, sel string) (*executor.Operation, error) {
	for _, op := range ops {
		if op.ID == sel || op.Key == sel {
			return op, nil
		}
	}
	return nil, unknownOperation(ops, sel)
}

// unknownOperation says that no operation has sel as its id or key, and
// lists the recorded ones.
func unknownOperation(ops []*executor.Operation, sel string) error {
	if len(ops) == 0 {
		return fmt.Errorf("no operation %q: no operation is recorded on this cluster", sel)
	}
	var known []string
	for _, op := range sortOperations(ops) {
		known = append(known, op.ID+" ("+op.Key+")")
	}
	return fmt.Errorf("no operation has the id or key %q; the recorded ones are: %s", sel, joinComma(known))
}
