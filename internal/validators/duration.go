package validators

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = durationValidator{}

type durationValidator struct{ lowest, highest time.Duration }

// Duration checks that a string parses as a Go duration within [min, max].
func Duration(lowest, highest time.Duration) validator.String {
	return durationValidator{lowest: lowest, highest: highest}
}

func (v durationValidator) Description(context.Context) string {
	return fmt.Sprintf("value must be a duration such as \"30s\" or \"5m\", between %s and %s", v.lowest, v.highest)
}

func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%q is not a duration: %v. Write for example \"30s\" or \"5m\".", s, err))
	case d < v.lowest || d > v.highest:
		resp.Diagnostics.AddAttributeError(req.Path, "Duration out of range",
			fmt.Sprintf("%s is outside the allowed range %s to %s.", d, v.lowest, v.highest))
	}
}
