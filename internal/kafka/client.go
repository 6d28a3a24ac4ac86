// Package kafka is the franz-go adapter behind kafkascale: it connects to a
// cluster, reads what the engine needs to plan (brokers, partitions, sizes)
// and carries out what the engine decides. It implements the executor's
// ports (Port, the operation store, the lease log) and holds no package-level
// state: what a client keeps lives on its Client. franz-go types (kgo, kadm,
// kmsg) stay inside this package: what it exports is in its own or the
// engine's types (a streams group, say, as StreamsGroup).
//
// Errors come at two levels, as in kadm: a failure of a whole request is the
// returned error, and per-item failures (one topic, one broker) are carried
// inside the result with the item they belong to.
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultRequestTimeout bounds one admin request, including the dial.
const DefaultRequestTimeout = 30 * time.Second

// metadataMinAge is how stale a cached Metadata answer may be.
const metadataMinAge = 250 * time.Millisecond

// Config is how to reach a cluster.
type Config struct {
	BootstrapServers []string
	TLS              *TLSConfig
	SASL             *SASLConfig
	// RequestTimeout bounds each admin call made through the client, so an
	// unreachable cluster fails with an error instead of hanging.
	RequestTimeout time.Duration
	ClientID       string
	// OnRequest, when set, is called after each request the client writes
	// to a broker, with Kafka's name for its API ("Metadata"): how tests and
	// benchmarks prove that a read is batched. A failed write is not
	// reported.
	OnRequest func(api string)
}

// TLSConfig holds PEM material. CACert may be inline PEM or a file path;
// ClientCert and ClientKey likewise.
type TLSConfig struct {
	CACert             string
	ClientCert         string
	ClientKey          string
	InsecureSkipVerify bool
	ServerName         string
}

// Client is one connection pool to one cluster. It is safe for concurrent
// use; the provider keeps exactly one per configured provider block.
type Client struct {
	cfg   Config
	opts  []kgo.Opt // connection options, reused by short-lived consumers
	kgo   *kgo.Client
	admin *kadm.Client
	// dialFailure is the last failed connection (address and error), so
	// that a TLS error can name the broker it came from.
	dialFailure atomic.Pointer[dialFailure]
	// topics is what the client keeps for its topics (refresh reader,
	// placements not yet visible, the replication-factor lock); it lives
	// and dies with the client.
	topics clientTopics
	// recent is the last Snapshot, shared by the reads of one Terraform
	// run (RecentSnapshot).
	recent recentSnapshot
	// clusterID is the cluster's id once read (ClusterID).
	clusterID atomic.Pointer[string]
	// operations is the operations topic as the client last read it, so
	// that each load reads only what was written since (GetOperation).
	operations operationsLog
	// throttleReader is the broker the throttled-replica lists are read
	// from (throttleLists).
	throttleReader pinnedBroker
	// rfGuard is set once every broker was seen to know the replication
	// factor guard (ReassignKeepingReplicationFactor): asked again only
	// until then.
	rfGuard atomic.Bool
}

// NewClient validates cfg and builds a client. It does not dial: Terraform
// configures providers even for plans that never touch the cluster, and a
// dial here would turn every `terraform validate` into a network call.
func NewClient(cfg Config) (*Client, error) {
	if len(cfg.BootstrapServers) == 0 {
		return nil, errors.New("no bootstrap servers: set bootstrap_servers or KAFKA_BOOTSTRAP_SERVERS")
	}
	for _, s := range cfg.BootstrapServers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, fmt.Errorf("bootstrap server %q is not host:port: %w", s, err)
		}
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "kafkascale"
	}

	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.BootstrapServers...),
		kgo.ClientID(cfg.ClientID),
		kgo.DialTimeout(cfg.RequestTimeout),
		// Without a retry timeout franz-go retries a request to an
		// unreachable cluster until the context ends; cap it by the
		// request timeout so the error names the servers promptly.
		kgo.RetryTimeout(cfg.RequestTimeout),
		// kadm answers Metadata from franz-go's cache while it is younger
		// than this (5 s by default), and the executor polls the ISR and
		// the brokers through it: every reassignment then looked
		// unfinished for up to 5 s after the controller had completed it,
		// which was most of each group's fixed cost. A quarter second
		// keeps the polls fresh and still spares a cluster in trouble a
		// storm of refreshes.
		kgo.MetadataMinAge(metadataMinAge),
	}
	if cfg.TLS != nil {
		tc, err := cfg.TLS.build()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if cfg.SASL != nil {
		m, err := cfg.SASL.mechanism(cfg.RequestTimeout)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}

	c := &Client{cfg: cfg}
	c.topics = clientTopics{reader: NewTopicReader(c), placed: map[string]placedTopic{}}
	opts = append(opts, kgo.WithHooks(connectHook{c}, writeHook{&c.recent}))
	if cfg.OnRequest != nil {
		opts = append(opts, kgo.WithHooks(requestHook(cfg.OnRequest)))
	}
	cl, err := kgo.NewClient(append(opts,
		// Persisted plans of large clusters exceed the 1 MiB default batch;
		// zstd keeps them far below the operations topic's limit.
		kgo.ProducerBatchMaxBytes(operationMaxBytes),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()),
	)...)
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka client: %w", err)
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(cfg.RequestTimeout / time.Millisecond))
	c.opts, c.kgo, c.admin = opts, cl, adm
	return c, nil
}

// Close releases every connection.
func (c *Client) Close() { c.kgo.Close() }

// BootstrapServers returns the servers this client was configured with.
func (c *Client) BootstrapServers() []string { return append([]string(nil), c.cfg.BootstrapServers...) }

// withTimeout bounds one admin call by the configured request timeout, and
// turns a failure to reach the cluster into an error that names the servers.
func (c *Client) withTimeout(ctx context.Context, what string, fn func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	err := fn(rctx)
	if err == nil {
		return nil
	}
	if ae := c.authError(err); ae != nil {
		return fmt.Errorf("%s: %w", what, ae)
	}
	if stop := ctx.Err(); stop != nil {
		// The caller's own deadline (Terraform's timeouts) or an interrupt
		// ended the call: the cluster may be fine, so say which it was.
		return &StoppedError{What: what, Cause: context.Cause(ctx), Err: err}
	}
	if bd := refused(err); bd != nil {
		// One broker refused, not the cluster: say which, also when it
		// was one shard of a request sent to every broker.
		return fmt.Errorf("%s: %w", what, bd)
	}
	if isUnreachable(err) || errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return &UnreachableError{Servers: c.BootstrapServers(), Timeout: c.cfg.RequestTimeout, What: what, Err: err}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// readAny is withTimeout for a read that goes to any broker. kgo sends
// such a request to the next broker of its round, and a broker just
// killed stays in the round until the controller fences it: the
// executor's poll of the registrations failed an apply as "cluster
// unreachable" seconds after a broker died (ci18,
// brokerKilledMidReassignment), where the next poll would have seen it
// fenced. A refused connection reached no broker, so the read is made
// again, up to refusedTries times in all. Reads that go to every broker
// have their own wait (retryRefused); writes are not repeated here.
func (c *Client) readAny(ctx context.Context, what string, read func(context.Context) error) error {
	return c.withTimeout(ctx, what, func(ctx context.Context) error {
		err := read(ctx)
		for try := 1; try < refusedTries && err != nil && errors.Is(err, syscall.ECONNREFUSED) && refused(err) == nil && ctx.Err() == nil; try++ {
			err = read(ctx)
		}
		return err
	})
}

// refusedTries bounds the calls readAny makes when each one meets a broker
// that refuses the connection.
const refusedTries = 3

// StoppedError is a call that the caller's context ended: the apply's
// deadline passed or it was interrupted, whatever the cluster's health.
// errors.Is matches context.DeadlineExceeded or context.Canceled.
type StoppedError struct {
	What  string
	Cause error // context.Cause of the caller's context
	Err   error // what the call saw when it ended
}

func (e *StoppedError) Error() string {
	why := "it was interrupted"
	if errors.Is(e.Cause, context.DeadlineExceeded) {
		why = "the operation's deadline passed"
	}
	return fmt.Sprintf("%s: stopped because %s (%v)", e.What, why, e.Cause)
}

func (e *StoppedError) Unwrap() error { return e.Cause }

// UnreachableError says that no bootstrap server answered in time.
type UnreachableError struct {
	Servers []string
	Timeout time.Duration
	What    string
	Err     error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%s: no answer from the Kafka cluster at %s within %s: %v",
		e.What, strings.Join(e.Servers, ", "), e.Timeout, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

func isUnreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	return errors.As(err, &opErr) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, kgo.ErrClientClosed) || strings.Contains(err.Error(), "unable to dial")
}

// pemOrFile returns inline PEM as is, and otherwise reads the named file, so
// users can write either `file("ca.pem")` or a path.
func pemOrFile(attr, v string) ([]byte, error) {
	if strings.Contains(v, "-----BEGIN") {
		return []byte(v), nil
	}
	b, err := os.ReadFile(v) //nolint:gosec // the user names this PEM file in tls.* on purpose
	if err != nil {
		return nil, fmt.Errorf("tls.%s is neither inline PEM nor a readable file: %w", attr, err)
	}
	return b, nil
}

func (t *TLSConfig) build() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify, ServerName: t.ServerName} //nolint:gosec // opt-in by the user, documented as unsafe
	if t.CACert != "" {
		b, err := pemOrFile("ca_cert", t.CACert)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, errors.New("tls.ca_cert holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if (t.ClientCert == "") != (t.ClientKey == "") {
		return nil, errors.New("tls.client_cert and tls.client_key must be set together for mutual TLS")
	}
	if t.ClientCert != "" {
		cert, err := pemOrFile("client_cert", t.ClientCert)
		if err != nil {
			return nil, err
		}
		key, err := pemOrFile("client_key", t.ClientKey)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			// The underlying error never includes key material.
			return nil, fmt.Errorf("tls.client_cert and tls.client_key do not form a key pair: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
