package kafkatest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

const testToken = "t0ken-for-tests"

type apiClient struct {
	t     *testing.T
	base  string
	token string
	http  *retryablehttp.Client
}

// do sends one request, without retries, so that every status is the
// server's own first answer.
func (c *apiClient) do(method, path, body string) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := retryablehttp.NewRequestWithContext(c.t.Context(), method, c.base+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		c.t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	return resp.StatusCode, raw
}

func (c *apiClient) decode(raw []byte, v any) {
	c.t.Helper()
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(v); err != nil {
		c.t.Fatalf("decoding %s: %v", raw, err)
	}
}

func (c *apiClient) expectError(method, path, body string, status int, contains string) {
	c.t.Helper()
	got, raw := c.do(method, path, body)
	var eb platform.ErrorBody
	c.decode(raw, &eb)
	if got != status || !strings.Contains(eb.Error, contains) {
		c.t.Errorf("%s %s %s = %d %q, want %d with an error containing %q", method, path, body, got, eb.Error, status, contains)
	}
}

func (c *apiClient) put(count string) platform.Operation {
	c.t.Helper()
	status, raw := c.do(http.MethodPut, "/v1/clusters/local/broker-count", count)
	if status != http.StatusAccepted {
		c.t.Fatalf("PUT broker-count %s = %d %s, want 202", count, status, raw)
	}
	var resp platform.SetBrokerCountResponse
	c.decode(raw, &resp)
	if resp.Operation.ID == "" {
		c.t.Fatalf("PUT broker-count %s returned no operation id: %s", count, raw)
	}
	return resp.Operation
}

func (c *apiClient) wait(id string) platform.Operation {
	c.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		status, raw := c.do(http.MethodGet, "/v1/operations/"+id, "")
		if status != http.StatusOK {
			c.t.Fatalf("GET operation %s = %d %s", id, status, raw)
		}
		var op platform.Operation
		c.decode(raw, &op)
		if op.State.Done() {
			return op
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("operation %s still %s after 3 minutes: %s", id, op.State, op.Message)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *apiClient) cluster() platform.Cluster {
	c.t.Helper()
	status, raw := c.do(http.MethodGet, "/v1/clusters/local", "")
	if status != http.StatusOK {
		c.t.Fatalf("GET cluster = %d %s", status, raw)
	}
	var out platform.Cluster
	c.decode(raw, &out)
	return out
}

func TestScalingAPI(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{})
	api := kafkatest.NewScalingAPI(c, "local", testToken)
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); api.Close() })

	hc := retryablehttp.NewClient()
	hc.RetryMax = 0
	hc.Logger = nil
	client := &apiClient{t: t, base: srv.URL, token: testToken, http: hc}

	t.Run("rejects bad requests", func(t *testing.T) {
		anon := &apiClient{t: t, base: srv.URL, http: hc}
		anon.expectError(http.MethodGet, "/v1/clusters/local", "", http.StatusUnauthorized, "bearer token")
		wrong := &apiClient{t: t, base: srv.URL, token: "nope", http: hc}
		wrong.expectError(http.MethodPut, "/v1/clusters/local/broker-count", `{"broker_count":4}`, http.StatusUnauthorized, "bearer token")

		ac := &apiClient{t: t, base: srv.URL, token: testToken, http: hc}
		ac.expectError(http.MethodGet, "/v1/clusters/other", "", http.StatusNotFound, `no cluster "other"`)
		ac.expectError(http.MethodGet, "/v1/operations/op-nope", "", http.StatusNotFound, "no operation")
		ac.expectError(http.MethodPut, "/v1/clusters/local/broker-count", `{"broker_count":`, http.StatusBadRequest, "not a broker-count request")
		ac.expectError(http.MethodPut, "/v1/clusters/local/broker-count", `{"brokers":4}`, http.StatusBadRequest, "unknown field")
		ac.expectError(http.MethodPut, "/v1/clusters/local/broker-count", `{"broker_count":0}`, http.StatusBadRequest, "at least 1")
		ac.expectError(http.MethodPut, "/v1/clusters/local/broker-count", `{"broker_count":4,"remove_broker_ids":[1]}`, http.StatusBadRequest, "only applies to a scale-in")
		ac.expectError(http.MethodPut, "/v1/clusters/local/broker-count", `{"broker_count":2,"remove_broker_ids":[9]}`, http.StatusBadRequest, "broker 9, which is not in the cluster")
		ac.expectError(http.MethodPut, "/v1/clusters/local/broker-count", `{"broker_count":1,"remove_broker_ids":[3]}`, http.StatusBadRequest, "removes 2")
		ac.expectError(http.MethodDelete, "/v1/clusters/local", "", http.StatusMethodNotAllowed, "use GET")
		// None of these changed anything.
		if got := client.cluster(); got.BrokerCount != 3 || got.Operation != nil {
			t.Errorf("after rejected requests the cluster is %+v, want 3 brokers and no operation", got)
		}
	})

	t.Run("reports the cluster", func(t *testing.T) {
		got := client.cluster()
		want := platform.Cluster{ID: "local", BrokerCount: 3, Brokers: []platform.Broker{
			{ID: 1, Rack: "a", State: platform.BrokerRunning},
			{ID: 2, Rack: "b", State: platform.BrokerRunning},
			{ID: 3, Rack: "c", State: platform.BrokerRunning},
		}}
		if got.ID != want.ID || got.BrokerCount != want.BrokerCount || !slices.Equal(got.Brokers, want.Brokers) || got.Operation != nil {
			t.Errorf("GET cluster = %+v, want %+v", got, want)
		}
	})

	t.Run("scale out 3 to 4", func(t *testing.T) {
		op := client.put(`{"broker_count":4}`)
		if again := client.put(`{"broker_count":4}`); again.ID != op.ID {
			t.Errorf("repeating the request gave operation %s, want the running %s", again.ID, op.ID)
		}
		client.expectError(http.MethodPut, "/v1/clusters/local/broker-count", `{"broker_count":5}`, http.StatusConflict, op.ID)

		done := client.wait(op.ID)
		if done.State != platform.OperationSucceeded {
			t.Fatalf("scale-out ended %s: %s", done.State, done.Message)
		}
		view, err := kafkatest.DescribeCluster(t.Context(), c.Client())
		if err != nil {
			t.Fatal(err)
		}
		if len(view) != 4 || view[3].ID != 4 || view[3].Rack != "a" || view[3].Fenced {
			t.Errorf("after scale-out DescribeCluster = %+v, want broker 4 in rack a, unfenced", view)
		}
		got := client.cluster()
		if got.BrokerCount != 4 || got.Operation == nil || got.Operation.ID != op.ID || got.Operation.State != platform.OperationSucceeded {
			t.Errorf("after scale-out GET cluster = %+v", got)
		}
		if again := client.put(`{"broker_count":4}`); again.ID != op.ID || again.State != platform.OperationSucceeded {
			t.Errorf("repeating a finished request gave %+v, want the succeeded %s", again, op.ID)
		}
	})

	t.Run("scale in 4 to 3", func(t *testing.T) {
		op := client.put(`{"broker_count":3}`)
		done := client.wait(op.ID)
		if done.State != platform.OperationSucceeded {
			t.Fatalf("scale-in ended %s: %s", done.State, done.Message)
		}
		view, err := kafkatest.DescribeCluster(t.Context(), c.Client())
		if err != nil {
			t.Fatal(err)
		}
		var ids []int32
		for _, b := range view {
			ids = append(ids, b.ID)
		}
		if !slices.Equal(ids, []int32{1, 2, 3}) {
			t.Errorf("after scale-in DescribeCluster (fenced included) lists %v, want [1 2 3]: the highest id leaves by default", ids)
		}
		if got := client.cluster(); got.BrokerCount != 3 {
			t.Errorf("after scale-in GET cluster = %+v, want 3 brokers", got)
		}
		if n, _ := kafkatest.FindNodeProcesses(c.Dir() + "/broker-4"); len(n) != 0 {
			t.Errorf("broker 4's JVM survives the scale-in: %v", n)
		}
	})
}
