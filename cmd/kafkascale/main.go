// Command kafkascale reads what the kafkascale provider records on a
// cluster, from any machine that can reach it, even while an apply
// elsewhere holds the Terraform state lock:
//
//	kafkascale operations               every recorded operation, unfinished first, and orphaned throttles
//	kafkascale operation show ID|KEY    one operation's whole record: plan groups, throttle and its changes, brokers, errors
//	kafkascale watch [ID|KEY]           the running operation's progress until it ends: a bar on a terminal, plain lines otherwise
//	kafkascale lease                    who holds the cluster's operation lease, since when, for which operation, and who waits
//	kafkascale import-config            import blocks and resources adopting existing topics and the cluster
//	kafkascale report                   an HTML page of a plan preview (--broker-count N) or of an operation (--operation ID|KEY)
//	kafkascale completion SHELL         a shell completion script (bash, zsh, fish, powershell)
//
// operations, operation show, watch, lease and report take --output json:
// one JSON document, or for watch one JSON object a line. watch --serve
// also serves the report page of the operation it follows.
//
// It takes the provider's connection settings as flags, or from the
// provider's environment variables (KAFKA_BOOTSTRAP_SERVERS,
// KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD, and
// KAFKA_SASL_OAUTH_* for OAUTHBEARER). It only reads: it never writes to
// the cluster.
//
// The reading lives in internal/kafka (the operations topic, replica
// sizes) and internal/engine/executor (progress, remaining time, orphaned
// throttles); this package holds the flags and the text.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set by `make build` and the release (ldflags -X main.version).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitError carries a command's exit code: watch's outcome.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// run executes one command line and returns the process's exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "kafkascale: "+ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "kafkascale: "+err.Error())
	return 1
}
