package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browser is a headless Chromium from the distribution's package
// (scripts/install-chromium.sh), driven over the DevTools protocol.
type browser struct {
	ctx     context.Context
	profile string
}

// startBrowser starts Chromium headless with a fresh profile and nothing
// it would fetch on its own (component updates, sync, background
// networking). Cleanup stops it and checks no process of it is left.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin := os.Getenv("CHROMIUM_BIN")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("no Chromium at %s: run scripts/install-chromium.sh (or make tools), or set CHROMIUM_BIN: %v", bin, err)
	}
	profile := t.TempDir() // removed after the browser stops: cleanups run last first
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-crash-reporter", true), chromedp.UserDataDir(profile),
		// The crash handler outlives the browser for a moment and keeps
		// its database under the config home: both inside the profile,
		// so nothing is written outside it and the check below sees it.
		chromedp.Env("XDG_CONFIG_HOME="+filepath.Join(profile, "config"), "XDG_CACHE_HOME="+filepath.Join(profile, "cache")),
		chromedp.WindowSize(1100, 900))
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser process to exit
		for deadline := time.Now().Add(10 * time.Second); ; {
			// Any process naming the profile: the browser, its renderers,
			// its crash handler.
			out, _ := exec.Command("pgrep", "-a", "-f", "--", profile).Output()
			if len(strings.TrimSpace(string(out))) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("Chromium processes outlive the test: %s", out)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	// Started here, so that a browser that cannot start fails at once.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	return &browser{ctx: ctx, profile: profile}
}

// opened is what a page did while it loaded: every request it made and
// every console error, exception and error of the browser log.
type opened struct {
	mu       sync.Mutex
	requests []string
	errors   []string
}

func (o *opened) listen(ev any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		o.requests = append(o.requests, e.Request.URL)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
			o.errors = append(o.errors, fmt.Sprintf("console.%s: %v", e.Type, e.Args))
		}
	case *runtime.EventExceptionThrown:
		o.errors = append(o.errors, "exception: "+e.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			o.errors = append(o.errors, fmt.Sprintf("log %s (%s): %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

// open loads the file in a new tab and checks that it made no request but
// for itself and wrote no error. It returns the tab.
func (b *browser) open(t *testing.T, file string) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	var o opened
	if err := chromedp.Listen(tab, o.listen); err != nil {
		t.Fatal(err)
	}
	url := "file://" + file
	if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	// Late errors (a font or an image fetched after load) get a moment.
	time.Sleep(500 * time.Millisecond)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.requests {
		if r != url {
			t.Errorf("%s requested %s: the page must need nothing outside itself", file, r)
		}
	}
	if len(o.requests) == 0 {
		t.Errorf("no request seen for %s itself: the network events are not watched", url)
	}
	for _, e := range o.errors {
		t.Errorf("%s: %s", file, e)
	}
	return tab
}
