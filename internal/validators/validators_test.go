package validators_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/validators"
)

func run(v validator.String, val types.String) *validator.StringResponse {
	resp := &validator.StringResponse{}
	v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: val}, resp)
	return resp
}

func TestHostPort(t *testing.T) {
	cases := map[string]string{ // value -> substring of the error, "" for valid
		"127.0.0.1:9092": "",
		"[::1]:9092":     "",
		"kafka-0:19092":  "",
		"127.0.0.1":      "missing port",
		":9092":          "host is empty",
		"host:0":         "not between 1 and 65535",
		"host:99999":     "not between 1 and 65535",
		"host:abc":       "not between 1 and 65535",
	}
	for in, want := range cases {
		resp := run(validators.HostPort(), types.StringValue(in))
		if want == "" {
			if resp.Diagnostics.HasError() {
				t.Errorf("%q: unexpected error %v", in, resp.Diagnostics)
			}
			continue
		}
		if !resp.Diagnostics.HasError() {
			t.Errorf("%q: want an error containing %q, got none", in, want)
			continue
		}
		if d := resp.Diagnostics.Errors()[0].Detail(); !strings.Contains(d, want) {
			t.Errorf("%q: error %q does not contain %q", in, d, want)
		}
	}
	if run(validators.HostPort(), types.StringNull()).Diagnostics.HasError() || run(validators.HostPort(), types.StringUnknown()).Diagnostics.HasError() {
		t.Error("null and unknown values must pass")
	}
}

func TestDuration(t *testing.T) {
	for in, ok := range map[string]bool{"30s": true, "1h": true, "500ms": true, "-5s": true, "soon": false, "": false, "30": false} {
		if got := !run(validators.Duration(), types.StringValue(in)).Diagnostics.HasError(); got != ok {
			t.Errorf("%q: valid=%v, want %v", in, got, ok)
		}
	}
}

func TestDurationBetween(t *testing.T) {
	v := validators.DurationBetween(time.Second, time.Hour)
	// A value that does not parse is Duration's to report, not this one's.
	for in, ok := range map[string]bool{"30s": true, "1h": true, "1s": true, "500ms": false, "2h": false, "soon": true, "": true} {
		if got := !run(v, types.StringValue(in)).Diagnostics.HasError(); got != ok {
			t.Errorf("%q: valid=%v, want %v", in, got, ok)
		}
	}
	if d := run(validators.DurationBetween(3*time.Second, 5*time.Minute), types.StringValue("1s")).Diagnostics.Errors()[0].Detail(); d != "1s is outside the allowed range 3s to 5m." {
		t.Errorf("detail %q", d)
	}
	if run(v, types.StringNull()).Diagnostics.HasError() || run(v, types.StringUnknown()).Diagnostics.HasError() {
		t.Error("null and unknown values must pass")
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{5 * time.Minute: "5m", time.Hour: "1h", 24 * time.Hour: "24h", 90 * time.Second: "1m30s", 3 * time.Second: "3s", 0: "0s", 90 * time.Minute: "1h30m"} {
		if got := validators.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestURL(t *testing.T) {
	for in, ok := range map[string]bool{"http://127.0.0.1:7070": true, "https://scale.example/api": true, "127.0.0.1:7070": false, "ftp://x": false, "http://": false} {
		if got := !run(validators.URL(), types.StringValue(in)).Diagnostics.HasError(); got != ok {
			t.Errorf("%q: valid=%v, want %v", in, got, ok)
		}
	}
}
