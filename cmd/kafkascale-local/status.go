package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

func cmdStatus(args []string, stdout io.Writer) error {
	fs := newFlagSet("status")
	dirFlag := fs.String("dir", defaultDir, "directory the cluster was started in")
	token := fs.String("token", os.Getenv(envToken), "bearer token of the scaling API (default $"+envToken+")")
	bootstrapOnly := fs.Bool("bootstrap", false, "print only the running brokers' addresses, comma-separated (for scripts)")
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
	if !st.supervisorAlive() {
		return fmt.Errorf("no cluster is up in %s; start one with `kafkascale-local up --dir %s`", dir, *dirFlag)
	}
	if !st.Ready {
		fmt.Fprintf(stdout, "Cluster %q in %s is starting (supervisor pid %d, log %s).\n", st.ClusterID, dir, st.SupervisorPID, logPath(dir))
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()

	// The platform's view, through the scaling API.
	platformView, apiErr := getCluster(ctx, st, *token)

	// Kafka's view: every registered broker, fenced or not, from the
	// brokers the supervisor last recorded as running.
	var kafkaView []kafkatest.RegisteredBroker
	cl, kerr := kgo.NewClient(kgo.SeedBrokers(st.BootstrapServer...))
	if kerr == nil {
		kafkaView, kerr = kafkatest.DescribeCluster(ctx, cl)
		cl.Close()
	}

	var live []string
	for _, b := range kafkaView {
		if !b.Fenced {
			live = append(live, b.Host+":"+strconv.Itoa(int(b.Port)))
		}
	}
	if *bootstrapOnly {
		if kerr != nil || len(live) == 0 {
			return fmt.Errorf("no running broker answered: %v", kerr)
		}
		fmt.Fprintln(stdout, strings.Join(live, ","))
		return nil
	}
	fmt.Fprintf(stdout, "cluster %q (Kafka %s, cluster id %s), supervisor pid %d\n", st.ClusterID, kafkatest.KafkaVersion, st.KafkaClusterID, st.SupervisorPID)
	fmt.Fprintf(stdout, "scaling API:       %s\n", st.APIURL)
	fmt.Fprintf(stdout, "bootstrap servers: %s\n", strings.Join(live, ","))

	type row struct{ rack, addr, platform, kafka string }
	rows := map[int32]*row{}
	var order []int32
	get := func(id int32) *row {
		if r, ok := rows[id]; ok {
			return r
		}
		r := &row{platform: "-", kafka: "not registered"}
		rows[id] = r
		order = append(order, id)
		return r
	}
	if platformView != nil {
		for _, b := range platformView.Brokers {
			r := get(b.ID)
			r.rack, r.platform = b.Rack, string(b.State)
		}
	}
	for _, b := range kafkaView {
		r := get(b.ID)
		r.rack, r.addr, r.kafka = b.Rack, b.Host+":"+strconv.Itoa(int(b.Port)), "unfenced"
		if b.Fenced {
			r.kafka = "fenced"
		}
	}
	slices.Sort(order)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tRACK\tADDRESS\tPLATFORM\tKAFKA")
	for _, id := range order {
		r := rows[id]
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", id, r.rack, r.addr, r.platform, r.kafka)
	}
	tw.Flush()
	if platformView != nil && platformView.Operation != nil {
		op := platformView.Operation
		fmt.Fprintf(stdout, "last operation: %s %s %s\n", op.ID, op.State, op.Message)
	}
	if apiErr != nil {
		fmt.Fprintf(stdout, "scaling API: %v\n", apiErr)
	}
	if kerr != nil {
		fmt.Fprintf(stdout, "Kafka: %v\n", kerr)
	}
	if apiErr != nil && kerr != nil {
		return fmt.Errorf("neither the scaling API nor Kafka answered")
	}
	return nil
}

func getCluster(ctx context.Context, st *state, token string) (*platform.Cluster, error) {
	client := retryablehttp.NewClient()
	client.Logger = nil
	client.RetryMax = 2
	client.RetryWaitMax = time.Second
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, st.APIURL+"/v1/clusters/"+st.ClusterID, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var eb platform.ErrorBody
		_ = json.NewDecoder(resp.Body).Decode(&eb)
		return nil, fmt.Errorf("GET /v1/clusters/%s: %s: %s", st.ClusterID, resp.Status, eb.Error)
	}
	var out platform.Cluster
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	return &out, nil
}
