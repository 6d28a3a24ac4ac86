package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/report"
)

// `kafkascale watch --serve ADDR` serves the report page of the operation
// it follows, as last read, reloading itself while the operation runs. It
// reads nothing more than the watch does, and answers GET only.

// livePage is the operation the watch read last, served as its page.
type livePage struct {
	mu sync.Mutex
	op *executor.Operation
	// every is how often a page of a running operation reloads.
	every time.Duration
	now   func() time.Time
}

func (p *livePage) set(op *executor.Operation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.op = op
}

func (p *livePage) get() *executor.Operation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.op
}

// ServeHTTP answers / with the page and /data.json with its data
// (report --output json).
func (p *livePage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "read-only: GET only", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path != "/" && r.URL.Path != "/data.json" {
		http.NotFound(w, r)
		return
	}
	op := p.get()
	if op == nil {
		http.Error(w, "no operation read yet", http.StatusServiceUnavailable)
		return
	}
	d := report.FromOperation(op, p.now())
	w.Header().Set("Cache-Control", "no-store")
	if r.URL.Path == "/data.json" {
		w.Header().Set("Content-Type", "application/json")
		_ = writeJSON(w, d)
		return
	}
	every := p.every
	if op.Done() {
		every = 0 // nothing changes any more
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = report.RenderRefreshing(w, d, every)
}

// servedView shows the watch as its view does, and keeps each operation
// read for the page.
type servedView struct {
	view
	page *livePage
}

func (v servedView) last(op *executor.Operation) { v.page.set(op); v.view.last(op) }
func (v servedView) following(op *executor.Operation) {
	v.page.set(op)
	v.view.following(op)
}

func (v servedView) reading(now time.Time, op *executor.Operation, p executor.Progress, rate float64) {
	v.page.set(op)
	v.view.reading(now, op, p, rate)
}

func (v servedView) ended(now time.Time, op *executor.Operation, p executor.Progress, rate float64) {
	v.page.set(op)
	v.view.ended(now, op, p, rate)
}

// serveAddr is addr with 127.0.0.1 as its host unless it names one: the
// page is for the operator's own browser unless they say otherwise.
func serveAddr(addr string) string {
	if !strings.Contains(addr, ":") {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // Listen says what is wrong with it
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// serve listens on addr and serves page until stop is called; it says
// where on stderr.
func serve(addr string, page http.Handler, stderr io.Writer) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", serveAddr(addr))
	if err != nil {
		return "", nil, fmt.Errorf("--serve %s: %w", addr, err)
	}
	srv := &http.Server{Handler: page, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	url = "http://" + l.Addr().String() + "/"
	fmt.Fprintf(stderr, "serving the operation's page at %s (read-only)\n", url)
	return url, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// watchServing runs the watch with its page served at addr. Once the
// operation has ended the page stays, final, until ctx ends (an
// interrupt); the exit status is still the operation's outcome.
func watchServing(ctx context.Context, w *watcher, sel, addr string, stderr io.Writer) error {
	page := &livePage{every: max(w.interval, 2*time.Second), now: w.now}
	w.view = servedView{view: w.view, page: page}
	url, stop, err := serve(addr, page, stderr)
	if err != nil {
		return err
	}
	defer stop()
	err = w.run(ctx, sel)
	if page.get() == nil || ctx.Err() != nil {
		return err
	}
	fmt.Fprintf(stderr, "the operation has ended; its page stays at %s until interrupted\n", url)
	<-ctx.Done()
	return err
}
