package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/engine/executor"
)

func TestServeAddr(t *testing.T) {
	for in, want := range map[string]string{"8080": "127.0.0.1:8080", ":8080": "127.0.0.1:8080", "0.0.0.0:80": "0.0.0.0:80", "[::1]:9": "[::1]:9"} {
		if got := serveAddr(in); got != want {
			t.Errorf("serveAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// watch --serve serves the page of the operation it follows, reloading
// while it runs, GET only; once it has ended the page stays, final, until
// the watch is interrupted, and the exit status is its outcome.
func TestWatchServesThePage(t *testing.T) {
	done := completed()
	done.Key, done.ID = "cluster/abc", "op-running"
	src := &fakeSource{records: [][]*executor.Operation{{running()}, {running()}, {running()}, {done}}}
	var out, errb syncBuffer
	w := &watcher{src: src, view: &textView{out: &out, interval: time.Millisecond}, interval: 300 * time.Millisecond, now: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- watchServing(ctx, w, "", "127.0.0.1:0", &errb) }()

	url := waitFor(t, &errb, "serving the operation's page at ")
	page := get(t, url, http.StatusOK)
	if !strings.Contains(page, "operation op-running (scale-out, reassign)") || !strings.Contains(page, `<meta http-equiv="refresh" content="2">`) {
		t.Fatalf("the running operation's page, reloading every 2s, expected:\n%.600s", page)
	}
	resp, err := http.Post(url, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST answered %d, want 405", resp.StatusCode)
	}
	get(t, url+"nope", http.StatusNotFound)

	waitFor(t, &errb, "the operation has ended; its page stays at ")
	page = get(t, url, http.StatusOK)
	if !strings.Contains(page, "completed)</title>") || strings.Contains(page, "http-equiv=\"refresh\"") {
		t.Fatalf("the ended operation's page, not reloading, expected:\n%.600s", page)
	}
	if js := get(t, url+"data.json", http.StatusOK); !strings.Contains(js, `"phase":"completed"`) {
		t.Fatalf("data.json: %.300s", js)
	}
	cancel()
	if err := <-ended; err != nil {
		t.Fatalf("watch of a completed operation ended with %v, want its outcome 0", err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("the page is still served after the watch ended")
	}
}

func get(t *testing.T, url string, status int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d %s, want %d", url, resp.StatusCode, b, status)
	}
	return string(b)
}

// waitFor waits for a line starting with prefix and returns the rest of
// its first word.
func waitFor(t *testing.T, b *syncBuffer, prefix string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, l := range strings.Split(b.String(), "\n") {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return strings.Fields(rest)[0]
			}
		}
	}
	t.Fatalf("no line %q in:\n%s", prefix, b.String())
	return ""
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
