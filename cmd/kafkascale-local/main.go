// Command kafkascale-local runs a real local Kafka cluster (Apache Kafka in
// KRaft mode, one JVM per node on 127.0.0.1) together with the HTTP scaling
// API that kafkascale's "http" scaling method talks to.
//
//	kafkascale-local up     [--dir D] [--brokers 3] [--racks a,b,c] [--api-addr 127.0.0.1:7070]
//	                        [--cluster-id local] [--token T | $KAFKASCALE_SCALING_TOKEN]
//	kafkascale-local status [--dir D] [--token T]
//	kafkascale-local down   [--dir D]
//	kafkascale-local fetch
//	kafkascale-local load   [--dir D] [--topic demo] [--partitions 24] [--replication-factor 3] [--mb 100]
//
// `up` starts a detached supervisor that owns the JVMs and serves the API;
// `down` stops it. Every JVM dies with the supervisor, even when it is
// killed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

const (
	defaultDir     = ".kafkascale-local"
	defaultAPIAddr = "127.0.0.1:7070"
	envToken       = "KAFKASCALE_SCALING_TOKEN"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "up":
		err = cmdUp(args[1:], stdout)
	case "status":
		err = cmdStatus(args[1:], stdout)
	case "down":
		err = cmdDown(args[1:], stdout)
	case "fetch":
		err = cmdFetch(args[1:], stdout)
	case "load":
		err = cmdLoad(args[1:], stdout)
	case "serve": // hidden: the supervisor that `up` starts
		err = cmdServe(args[1:])
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "kafkascale-local: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "kafkascale-local %s: %v\n", args[0], err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "kafkascale-local %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: kafkascale-local <command> [flags]

Commands:
  up      start a local Kafka cluster and its scaling API in the background
  status  show the brokers of the running cluster (--bootstrap: addresses only)
  load    create a topic and fill it with data, for demos
  down    stop the cluster and remove its files
  fetch   download the pinned Kafka releases (4.4, and 3.9 for the tests) into the cache

Run "kafkascale-local <command> -h" for a command's flags.
`)
}

type usageError struct{ error }

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("kafkascale-local "+name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))}
	}
	return nil
}

func parseRacks(s string) ([]string, error) {
	var racks []string
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			return nil, usageError{fmt.Errorf("--racks %q has an empty rack name", s)}
		}
		racks = append(racks, r)
	}
	return racks, nil
}
