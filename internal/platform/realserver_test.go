package platform_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

func TestMain(m *testing.M) { kafkatest.Main(m, nil) }

// The client against the real scaling API of a real local cluster: a PUT
// really starts and stops a broker, a repeated PUT is the same operation,
// and auth and unknown ids fail as the contract says.
func TestClientAgainstRealScalingAPI(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3})
	api := kafkatest.NewScalingAPI(c, "local", "tok")
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); api.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	cl, err := platform.NewHTTPClient(platform.HTTPConfig{Endpoint: srv.URL, ClusterID: "local", Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.GetCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "local" || got.BrokerCount != 3 || len(got.Brokers) != 3 {
		t.Fatalf("GetCluster = %+v, want local with 3 brokers", got)
	}

	op, err := cl.SetBrokerCount(ctx, platform.SetBrokerCountRequest{BrokerCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.SetBrokerCount(ctx, platform.SetBrokerCountRequest{BrokerCount: 4})
	if err != nil || again.ID != op.ID {
		t.Fatalf("repeating the PUT gave %+v, %v; want the same operation %s", again, err, op.ID)
	}
	// Another count while it runs is refused; AwaitIdle, which a cancel
	// of an interrupted scale-out calls, returns only once it has ended.
	if _, err := cl.SetBrokerCount(ctx, platform.SetBrokerCountRequest{BrokerCount: 5}); !platform.IsConflict(err) {
		t.Errorf("another count while operation %s runs: %v, want 409", op.ID, err)
	}
	scaler := &platform.HTTPScaler{Client: cl, PollInterval: 200 * time.Millisecond}
	if err := scaler.AwaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	done, err := cl.GetOperation(ctx, op.ID)
	if err != nil || done.State != platform.OperationSucceeded {
		t.Fatalf("after AwaitIdle, operation %s = %+v, %v; want SUCCEEDED", op.ID, done, err)
	}
	regs, err := kafkatest.DescribeCluster(ctx, c.Client())
	if err != nil {
		t.Fatal(err)
	}
	if len(regs) != 4 {
		t.Fatalf("%d brokers registered after scaling to 4", len(regs))
	}

	op, err = cl.SetBrokerCount(ctx, platform.SetBrokerCountRequest{BrokerCount: 3, RemoveBrokerIDs: []int32{4}})
	if err != nil {
		t.Fatal(err)
	}
	if done, err = cl.WaitOperation(ctx, op.ID, 200*time.Millisecond); err != nil || done.State != platform.OperationSucceeded {
		t.Fatalf("scale-in WaitOperation = %+v, %v", done, err)
	}
	// Nothing runs now: AwaitIdle answers from one read.
	if err := scaler.AwaitIdle(ctx); err != nil {
		t.Errorf("AwaitIdle with nothing running: %v", err)
	}
	if regs, err = kafkatest.DescribeCluster(ctx, c.Client()); err != nil || len(regs) != 3 {
		t.Fatalf("after removing broker 4: %v registered (%v)", regs, err)
	}

	bad, _ := platform.NewHTTPClient(platform.HTTPConfig{Endpoint: srv.URL, ClusterID: "local", Token: "wrong", MaxRetries: -1})
	if _, err := bad.GetCluster(ctx); !platform.IsUnauthorized(err) {
		t.Errorf("wrong token: %v, want 401", err)
	}
	unknown, _ := platform.NewHTTPClient(platform.HTTPConfig{Endpoint: srv.URL, ClusterID: "nope", Token: "tok", MaxRetries: -1})
	if _, err := unknown.GetCluster(ctx); !platform.IsNotFound(err) {
		t.Errorf("unknown cluster id: %v, want 404", err)
	}
	// Removing broker 99, which the cluster does not have: the server
	// refuses with 400.
	if _, err := cl.SetBrokerCount(ctx, platform.SetBrokerCountRequest{BrokerCount: 2, RemoveBrokerIDs: []int32{99}}); !platform.IsBadRequest(err) {
		t.Errorf("removing an unknown broker: %v, want 400", err)
	}
}
