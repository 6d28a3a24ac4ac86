package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	var conn connFlags
	root := &cobra.Command{
		Use:   "kafkascale",
		Short: "Follow the operations the kafkascale Terraform provider runs on a Kafka cluster",
		Long: "kafkascale reads the operations the kafkascale provider records in " +
			"__kafkascale_operations, and the live cluster, from any machine that can reach it: " +
			"also while an apply elsewhere holds the Terraform state lock. It never writes.",
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
	return root
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
