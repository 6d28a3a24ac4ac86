package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
	cl, err := kgo.NewClient(kgo.SeedBrokers(st.BootstrapServer...), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedBytes(64<<20))
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

	const size = 4096
	n := int64(*mb) << 20 / size
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := int64(0); i < n; i++ {
		v := make([]byte, size)
		if _, err := rand.Read(v); err != nil {
			return err
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: *topic, Value: v}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("writing to %s: %w", *topic, firstErr)
	}
	fmt.Fprintf(stdout, "wrote %d MiB to topic %s in %s\n", *mb, *topic, time.Since(start).Round(time.Millisecond))
	return nil
}
