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
	v := validators.Duration(time.Second, time.Hour)
	for in, ok := range map[string]bool{"30s": true, "1h": true, "1s": true, "500ms": false, "2h": false, "soon": false, "": false} {
		if got := !run(v, types.StringValue(in)).Diagnostics.HasError(); got != ok {
			t.Errorf("%q: valid=%v, want %v", in, got, ok)
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
