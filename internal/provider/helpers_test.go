package provider_test

import (
	"net"
	"regexp"
	"strings"
	"testing"
)

// wrapped compiles a pattern for a diagnostic Terraform may have wrapped
// across lines: every space in the pattern matches any run of white space.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

// closedPort returns a 127.0.0.1 address nothing listens on: it binds a free
// port and releases it.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
