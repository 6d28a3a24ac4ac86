package metrics_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/metrics"
)

// idleRatio is the figure the stand-in exporter reports for broker 1; a
// query answered by Prometheus with it proves the whole path worked.
const idleRatio = 0.73

// The real Prometheus, behind each kind of login the metrics block offers:
// right credentials read broker 1's handler idle ratio through the default
// query; wrong or missing ones fail with the server's URL and the status,
// never as "no metrics", which would only hold the throttle.
func TestPrometheusAuthOnRealServer(t *testing.T) {
	kafkatest.RequireAcceptance(t)

	t.Run("basic auth", func(t *testing.T) {
		hash, err := bcrypt.GenerateFromPassword([]byte("right-password"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		// Prometheus' own --web.config.file checks the bcrypt hash.
		m := startPrometheus(t, kafkatest.MetricsOptions{
			WebConfig: fmt.Sprintf("basic_auth_users:\n  kafkascale: %q\n", hash),
			Transport: header{"Authorization", basicAuth("kafkascale", "right-password"), http.DefaultTransport},
		})
		assertReads(t, metrics.Config{URL: m.URL(), Username: "kafkascale", Password: "right-password"})
		assertRefused(t, m.URL(), metrics.Config{URL: m.URL(), Username: "kafkascale", Password: "wrong-password"})
		assertRefused(t, m.URL(), metrics.Config{URL: m.URL(), Username: "someone-else", Password: "right-password"})
		assertRefused(t, m.URL(), metrics.Config{URL: m.URL()})
		// A bearer token is no basic login either.
		assertRefused(t, m.URL(), metrics.Config{URL: m.URL(), BearerToken: "right-password"})
	})

	t.Run("TLS with a CA", func(t *testing.T) {
		dir := t.TempDir()
		caPEM, certFile, keyFile := serverCert(t, dir)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
		m := startPrometheus(t, kafkatest.MetricsOptions{
			WebConfig: fmt.Sprintf("tls_server_config:\n  cert_file: %q\n  key_file: %q\n", certFile, keyFile),
			TLS:       true,
			Transport: tr,
		})
		if !strings.HasPrefix(m.URL(), "https://") {
			t.Fatalf("Prometheus URL %s is not https", m.URL())
		}
		assertReads(t, metrics.Config{URL: m.URL(), CACertPEM: caPEM})
		// Without the CA the system's CAs do not know the server's; with
		// another CA neither.
		otherCA, _, _ := serverCert(t, t.TempDir())
		for _, cfg := range []metrics.Config{{URL: m.URL()}, {URL: m.URL(), CACertPEM: otherCA}} {
			_, err := sample(t, cfg)
			want := "I/O pressure query: querying Prometheus at " + m.URL() + " failed: "
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
				t.Errorf("Sample with CA %.30q: error %v; want it to start %q and name the unknown authority", cfg.CACertPEM, err, want)
			} else {
				t.Logf("refused as wanted: %v", err)
			}
		}
		// Plain http to the TLS port is refused by the server.
		plain := strings.Replace(m.URL(), "https://", "http://", 1)
		if _, err := sample(t, metrics.Config{URL: plain}); err == nil || !strings.Contains(err.Error(), "HTTP 400 Bad Request") || !strings.Contains(err.Error(), plain) {
			t.Errorf("Sample over plain http of a TLS port: %v; want HTTP 400 naming %s", err, plain)
		} else {
			t.Logf("refused as wanted: %v", err)
		}
	})

	t.Run("bearer token", func(t *testing.T) {
		// Prometheus' web config has no bearer-token login (only basic auth
		// and TLS client certificates); managed services and Thanos put it in
		// a proxy before Prometheus. So does this test: a reverse proxy that
		// checks the Authorization header, in front of the real server.
		m := startPrometheus(t, kafkatest.MetricsOptions{})
		target, err := url.Parse(m.URL())
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer right-token" {
				http.Error(w, "invalid or missing bearer token", http.StatusUnauthorized)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		assertReads(t, metrics.Config{URL: srv.URL, BearerToken: "right-token"})
		assertRefused(t, srv.URL, metrics.Config{URL: srv.URL, BearerToken: "wrong-token"})
		assertRefused(t, srv.URL, metrics.Config{URL: srv.URL})
		assertRefused(t, srv.URL, metrics.Config{URL: srv.URL, Username: "right-token", Password: "x"})
	})
}

// startPrometheus starts the real Prometheus with opts, scraping a
// stand-in exporter as broker 1, and waits for two scrapes. The stand-in
// serves the two metrics the default handler idle query reads: the login
// under test is between kafkascale and Prometheus, not Prometheus and the
// brokers, so no Kafka (and no JVM) is needed.
func startPrometheus(t *testing.T, opts kafkatest.MetricsOptions) *kafkatest.Metrics {
	t.Helper()
	opts.Brokers = []int32{1}
	m := kafkatest.StartMetricsT(t, opts)
	exp, err := url.Parse(m.ExporterURL(1))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", exp.Host)
	if err != nil {
		t.Fatalf("listening on broker 1's exporter address %s: %v", exp.Host, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE kafka_server_request_handler_avg_idle_ratio gauge\nkafka_server_request_handler_avg_idle_ratio %g\n", idleRatio)
		fmt.Fprintf(w, "# TYPE kafka_server_request_handler_idle_seconds_total counter\nkafka_server_request_handler_idle_seconds_total 120\n")
	}))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := m.WaitScraped(ctx, 1); err != nil {
		t.Fatal(err)
	}
	return m
}

func sample(t *testing.T, cfg metrics.Config) (float64, error) {
	t.Helper()
	p, err := metrics.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	got, err := p.Sample(ctx, []int32{1})
	if err != nil {
		return 0, err
	}
	return got[0].HandlerIdle, nil
}

func assertReads(t *testing.T, cfg metrics.Config) {
	t.Helper()
	v, err := sample(t, cfg)
	if err != nil || v != idleRatio {
		t.Fatalf("Sample with the right login: handler idle %v, error %v; want %g", v, err, idleRatio)
	}
	t.Logf("Sample through %s: broker 1 handler idle %g", cfg.URL, v)
}

func assertRefused(t *testing.T, server string, cfg metrics.Config) {
	t.Helper()
	_, err := sample(t, cfg)
	want := "I/O pressure query: querying Prometheus at " + server + ": answered HTTP 401 Unauthorized"
	var se *metrics.StatusError
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		t.Errorf("Sample with user %q, token %q: error %v; want it to start %q", cfg.Username, cfg.BearerToken, err, want)
		return
	}
	t.Logf("refused as wanted: %v", err)
}

// header sets one request header, for kafkatest's own requests.
type header struct {
	name, value string
	next        http.RoundTripper
}

func (h header) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

func basicAuth(user, pass string) string {
	r, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	r.SetBasicAuth(user, pass)
	return r.Header.Get("Authorization")
}

// serverCert makes a throwaway CA and a certificate it signs for
// 127.0.0.1, writes the certificate and key into dir, and returns the CA's
// PEM.
func serverCert(t *testing.T, dir string) (caPEM []byte, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafkascale test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "prometheus"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), certFile, keyFile
}
