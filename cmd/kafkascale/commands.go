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
			"import-config writes Terraform configuration that adopts existing topics and the cluster.",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	conn.register(root.PersistentFlags())

	root.AddCommand(&cobra.Command{
		Use:   "operations",
		Short: "List every recorded operation, unfinished ones first, then orphaned throttles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ops, err := conn.readOperations(cmd.Context())
			if err != nil {
				return err
			}
			writeOperations(stdout, ops)
			return nil
		},
	})

	operation := &cobra.Command{Use: "operation", Short: "Inspect one operation"}
	operation.AddCommand(&cobra.Command{
		Use:   "show ID",
		Short: "Show an operation's whole record: plan groups, throttle, brokers and errors",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, err := conn.readOperations(cmd.Context())
			if err != nil {
				return err
			}
			op, err := findOperation(ops, args[0])
			if err != nil {
				return err
			}
			writeOperation(stdout, op)
			return nil
		},
	})
	root.AddCommand(operation)

	var key string
	var interval time.Duration
	watch := &cobra.Command{
		Use:   "watch",
		Short: "Follow the running operation with a progress bar until it ends",
		Long: "watch follows the unfinished operation (with several, choose one with --key) and shows " +
			"the bytes copied, the rate, the group and the ETA. It exits when the operation ends: 0 when it " +
			"completed, 1 when it was abandoned or cancelled. With no unfinished operation it says so, and " +
			"exits 0 when the last one completed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := conn.connect()
			if err != nil {
				return err
			}
			defer cl.Close()
			w := &watcher{src: clientSource{feed: cl.FollowOperations(), port: cl.Port()}, out: stdout, interval: interval, now: time.Now}
			return w.run(cmd.Context(), key)
		},
	}
	watch.Flags().StringVar(&key, "key", "", "the key of the operation to follow (see `kafkascale operations`)")
	watch.Flags().DurationVar(&interval, "interval", time.Second, "how often to read the operation and the cluster")
	root.AddCommand(watch)
	root.AddCommand(newImportConfigCommand(&conn, stdout, stderr))
	return root
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

// findOperation returns the operation whose id is id, or an error that
// lists the ids there are.
func findOperation(ops []*executor.Operation, id string) (*executor.Operation, error) {
	var ids []string
	for _, op := range sortOperations(ops) {
		if op.ID == id {
			return op, nil
		}
		ids = append(ids, op.ID)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no operation %q: no operation is recorded on this cluster", id)
	}
	return nil, fmt.Errorf("no operation %q; the recorded ones are: %s", id, joinComma(ids))
}
