package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// cmdLoad creates a topic (if missing) and writes incompressible records to
// it, so that a scaling demo has real bytes to move.
func cmdLoad(args []string, stdout io.Writer) error {
	fs := newFlagSet("load")
	dirFlag := fs.String("dir", defaultDir, "directory the cluster was started in")
	topic := fs.String("topic", "demo", "topic to create and fill")
	partitions := fs.Int("partitions", 24, "partitions of the topic, when it is created")
	rf := fs.Int("replication-factor", 3, "replication factor of the topic, when it is created")
	mb := fs.Int("mb", 100, "MiB to write")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *partitions < 1 || *rf < 1 || *mb < 0 {
		return usageError{errors.New("--partitions and --replication-factor must be at least 1, --mb at least 0")}
	}
	dir, err := absDir(*dirFlag)
	if err != nil {
		return err
	}
	st, err := readState(dir)
	if err != nil {
		return err
	}
	if !st.supervisorAlive() || !st.Ready {
		return fmt.Errorf("no cluster is up in %s; start one with `kafkascale-local up --dir %s`", dir, *dirFlag)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.BootstrapServer...))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(*partitions), int16(*rf), nil, *topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", *topic, err)
	}

	took, err := kafkatest.Fill(ctx, st.BootstrapServer, *topic, int64(*mb)<<20)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %d MiB to topic %s in %s\n", *mb, *topic, took.Round(time.Millisecond))
	return nil
}
