package main

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// supervisorGrace is how long down waits for an orderly stop before it
// kills the supervisor (whose JVMs then die with it).
const supervisorGrace = time.Minute

func cmdDown(args []string, stdout io.Writer) error {
	fs := newFlagSet("down")
	dirFlag := fs.String("dir", defaultDir, "directory the cluster was started in")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	dir, err := absDir(*dirFlag)
	if err != nil {
		return err
	}
	st, err := readState(dir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if !st.supervisorAlive() {
		jvms, _ := kafkatest.FindNodeProcesses(clusterDir(dir))
		if err := cleanup(ctx, dir); err != nil {
			return err
		}
		if len(jvms) > 0 {
			fmt.Fprintf(stdout, "No supervisor was running in %s; killed %d JVMs it had left.\n", dir, len(jvms))
		} else {
			fmt.Fprintf(stdout, "Nothing was running in %s.\n", dir)
		}
		return nil
	}

	if err := syscall.Kill(st.SupervisorPID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("signalling the supervisor (pid %d): %w", st.SupervisorPID, err)
	}
	deadline := time.Now().Add(supervisorGrace)
	for st.supervisorAlive() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	killed := false
	if st.supervisorAlive() {
		_ = syscall.Kill(st.SupervisorPID, syscall.SIGKILL)
		killed = true
	}
	// The supervisor stops its JVMs before it exits; this waits for any
	// that a killed supervisor left to their parent-death signal.
	if err := cleanup(ctx, dir); err != nil {
		return err
	}
	if killed {
		fmt.Fprintf(stdout, "The supervisor (pid %d) did not stop within %v and was killed; cluster %q is down.\n", st.SupervisorPID, supervisorGrace, st.ClusterID)
		return nil
	}
	fmt.Fprintf(stdout, "Cluster %q in %s is down.\n", st.ClusterID, dir)
	return nil
}

func cmdFetch(args []string, stdout io.Writer) error {
	fs := newFlagSet("fetch")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// Every release the tests run, so that `make test` downloads nothing:
	// the default one and the Kafka 3.9 of the compatibility subset.
	for _, v := range kafkatest.KafkaVersions {
		libs, err := kafkatest.EnsureKafkaVersion(context.Background(), v)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Kafka %s jars are in %s\n", v, libs)
	}
	return nil
}
