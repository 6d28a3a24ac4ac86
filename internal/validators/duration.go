package validators

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var (
	_ validator.String = durationValidator{}
	_ validator.String = durationBetweenValidator{}
)

type durationValidator struct{}

// Duration checks that a string parses as a Go duration. Its range is
// DurationBetween's, kept apart so that each refusal can be explained on
// its own: a value that is not a duration needs no range's why.
func Duration() validator.String { return durationValidator{} }

func (durationValidator) Description(context.Context) string {
	return "value must be a duration such as \"30s\" or \"5m\""
}

func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	if _, err := time.ParseDuration(s); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%q is not a duration: %v. Write for example \"30s\" or \"5m\".", s, err))
	}
}

type durationBetweenValidator struct{ lowest, highest time.Duration }

// DurationBetween checks that a duration lies within [lowest, highest]. It
// passes a value that does not parse: Duration reports that.
func DurationBetween(lowest, highest time.Duration) validator.String {
	return durationBetweenValidator{lowest: lowest, highest: highest}
}

func (v durationBetweenValidator) Description(context.Context) string {
	return fmt.Sprintf("value must be between %s and %s", FormatDuration(v.lowest), FormatDuration(v.highest))
}

func (v durationBetweenValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v durationBetweenValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil {
		return
	}
	if d < v.lowest || d > v.highest {
		resp.Diagnostics.AddAttributeError(req.Path, "Duration out of range",
			fmt.Sprintf("%s is outside the allowed range %s to %s.", FormatDuration(d), FormatDuration(v.lowest), FormatDuration(v.highest)))
	}
}

// FormatDuration writes d as a user would: "5m" and "1h", not "5m0s" and
// "1h0m0s".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
