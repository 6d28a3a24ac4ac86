package validators

import (
	"context"
	"fmt"
	"net/url"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

var _ validator.String = urlValidator{}

type urlValidator struct{}

// URL checks that a string is an absolute http or https URL with a host.
func URL() validator.String { return urlValidator{} }

func (urlValidator) Description(context.Context) string {
	return "value must be an http:// or https:// URL with a host"
}

func (v urlValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v urlValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	u, err := url.Parse(s)
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL", fmt.Sprintf("%q is not a URL: %v. Give the whole URL, scheme and host included, "+
			"for example \"https://host:8443/path\".", s, err))
	case u.Scheme != "http" && u.Scheme != "https":
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL", fmt.Sprintf("%q must start with http:// or https://. Give the whole URL, scheme and host included.", s))
	case u.Host == "":
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL", fmt.Sprintf("%q has no host.", s))
	}
}
