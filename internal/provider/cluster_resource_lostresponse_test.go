package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/platform"
)

// How the lostAnswerProxy loses the answer to a PUT of the broker count.
const (
	loseNone    = ""
	loseSilence = "silence" // never answer: the client's attempt times out
	loseReset   = "reset"   // close the connection with a TCP reset
)

// lostAnswerProxy sits in front of the real scaling API. Every request goes
// through to it over TCP; for the next PUT of the broker count it lets the
// real API act (brokers really start) and then loses the answer. No real
// server drops its own answers, which is why this one piece is written here.
type lostAnswerProxy struct {
	t       *testing.T
	backend *url.URL
	forward *httputil.ReverseProxy

	mu    sync.Mutex
	lose  string   // what to do with the next PUT's answer
	puts  int      // PUTs seen
	lost  int      // answers lost
	ops   []string // the operation ids the real API answered PUTs with
	conns []net.Conn
}

func newLostAnswerProxy(t *testing.T, backendURL string) *lostAnswerProxy {
	u, err := url.Parse(backendURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &lostAnswerProxy{t: t, backend: u, forward: httputil.NewSingleHostReverseProxy(u)}
	p.forward.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodPut {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(b))
			if err != nil {
				return err
			}
			p.noteOperation(b)
		}
		return nil
	}
	return p
}

// noteOperation keeps the operation id of a PUT's answer.
func (p *lostAnswerProxy) noteOperation(answer []byte) {
	var out platform.SetBrokerCountResponse
	if err := json.Unmarshal(answer, &out); err != nil {
		p.t.Errorf("proxy: the real API's answer to a PUT is not an operation: %v: %s", err, answer)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops = append(p.ops, out.Operation.ID)
}

func (p *lostAnswerProxy) loseNext(how string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lose, p.puts, p.lost, p.ops = how, 0, 0, nil
}

func (p *lostAnswerProxy) counts() (puts, lost int, ops []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.puts, p.lost, slices.Clone(p.ops)
}

func (p *lostAnswerProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/broker-count") {
		p.forward.ServeHTTP(w, r)
		return
	}
	p.mu.Lock()
	p.puts++
	how := p.lose
	p.lose = loseNone
	p.mu.Unlock()
	if how == loseNone {
		p.forward.ServeHTTP(w, r)
		return
	}

	// Let the real API act on the request and read its whole answer, so
	// that the operation is surely accepted before the answer is lost.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.t.Errorf("proxy: reading the PUT: %v", err)
		return
	}
	out, err := http.NewRequestWithContext(context.Background(), r.Method, p.backend.String()+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		p.t.Errorf("proxy: %v", err)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		p.t.Errorf("proxy: forwarding the PUT to the real API: %v", err)
		return
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.noteOperation(answer)
	p.t.Logf("proxy: the real API answered the PUT %s with %d %s; losing that answer (%s)", body, resp.StatusCode, bytes.TrimSpace(answer), how)

	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.t.Errorf("proxy: taking over the connection: %v", err)
		return
	}
	p.mu.Lock()
	p.lost++
	p.conns = append(p.conns, conn)
	p.mu.Unlock()
	switch how {
	case loseReset:
		// SO_LINGER 0: close sends RST, so the client reads ECONNRESET.
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		conn.Close()
	case loseSilence:
		// Hold the connection open and say nothing until the client gives
		// up on the attempt and closes it.
		_, _ = io.Copy(io.Discard, conn)
		conn.Close()
	}
}

func (p *lostAnswerProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// brokerWatch polls the brokers Kafka has registered for the whole test and
// keeps the highest count seen.
type brokerWatch struct {
	mu     sync.Mutex
	most   int
	cancel context.CancelFunc
	done   chan struct{}
}

func watchBrokers(t *testing.T, c *kafkatest.Cluster) *brokerWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &brokerWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			if regs, err := kafkatest.DescribeCluster(ctx, c.Client()); err == nil {
				w.mu.Lock()
				w.most = max(w.most, len(regs))
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *brokerWatch) stop() { w.cancel(); <-w.done }

func (w *brokerWatch) mostSeen() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.most
}

// The scaling API acts on the PUT of the broker count (brokers start), but
// its answer is lost: first the attempt times out, then the connection is
// reset. The PUT is idempotent, so the client repeats it and the platform
// answers with the operation already under way: the apply completes with
// exactly the brokers asked for, and no broker is ever started twice.
func TestAccClusterResource_lostScalingAnswer(t *testing.T) {
	testAccParallel(t)
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 3, Racks: []string{"a", "b", "c"}})
	api := kafkatest.NewScalingAPI(c, "local", "s3cret-token")
	backend := httptest.NewServer(api)
	proxy := newLostAnswerProxy(t, backend.URL)
	front := httptest.NewServer(proxy)
	t.Cleanup(func() { proxy.close(); front.Close(); backend.Close(); api.Close() })
	createTopicRF(t, c, "load", 12, 3)
	watch := watchBrokers(t, c)

	var started time.Time
	step := func(how string, brokers int) resource.TestStep {
		return resource.TestStep{
			PreConfig: func() {
				proxy.loseNext(how)
				started = time.Now()
			},
			Config: clusterConfig(c.BootstrapServers(), front.URL, brokers, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("kafkascale_cluster.test", tfjsonpath.New("brokers"), knownvalue.ListSizeExact(brokers)),
			},
			Check: func(*terraform.State) error {
				puts, lost, ops := proxy.counts()
				t.Logf("%s: %d PUTs answered with operations %v, %d answers lost, at most %d brokers registered, apply took %s",
					how, puts, ops, lost, watch.mostSeen(), time.Since(started).Round(time.Second))
				if lost != 1 || puts < 2 {
					t.Errorf("%s: the proxy lost %d answers out of %d PUTs; want one lost and the PUT repeated", how, lost, puts)
				}
				// The repeated PUT must find the operation the lost answer
				// carried, not start another.
				if len(slices.Compact(slices.Clone(ops))) != 1 {
					t.Errorf("%s: the PUTs were answered with operations %v; want the one operation the lost answer carried", how, ops)
				}
				if most := watch.mostSeen(); most != brokers {
					t.Errorf("%s: %d brokers were registered at some point; want never more than %d", how, most, brokers)
				}
				if n := len(c.Brokers()); n != brokers {
					t.Errorf("%s: the platform runs %d brokers, want %d", how, n, brokers)
				}
				assertOnlyBrokers(t, c, brokerRange(brokers))
				assertOperationCompleted(t, c, brokers)
				return nil
			},
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: clusterConfig(c.BootstrapServers(), front.URL, 3, "")},
			step(loseSilence, 4),
			step(loseReset, 5),
			{Config: clusterConfig(c.BootstrapServers(), front.URL, 5, ""), PlanOnly: true},
		},
	})
	watch.stop()
	if most := watch.mostSeen(); most != 5 {
		t.Errorf("at most %d brokers were registered through the test; want 5", most)
	}
	assertNoThrottles(t, c)
}

// brokerRange is 1..n, the ids the harness gives n brokers started in order.
func brokerRange(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	return ids
}
