package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/validators"
)

type saslModel struct {
	Mechanism        types.String `tfsdk:"mechanism"`
	Username         types.String `tfsdk:"username"`
	Password         types.String `tfsdk:"password"`
	Token            types.String `tfsdk:"token"`
	TokenEndpointURL types.String `tfsdk:"token_endpoint_url"`
	ClientID         types.String `tfsdk:"client_id"`
	ClientSecret     types.String `tfsdk:"client_secret"`
	Scopes           types.List   `tfsdk:"scopes"`
}

// passwordMechanisms and the attributes that belong to one family of
// mechanisms: each is refused under another mechanism, at the attribute.
var (
	passwordMechanisms = []string{kafka.MechanismPlain, kafka.MechanismScramSHA256, kafka.MechanismScramSHA512}
	passwordAttributes = []string{"username", "password"}
	oauthAttributes    = []string{"token", "token_endpoint_url", "client_id", "client_secret", "scopes"}
)

func saslBlock() schema.SingleNestedBlock {
	clientCredentials := path.MatchRelative().AtParent().AtName("token_endpoint_url")
	return schema.SingleNestedBlock{
		MarkdownDescription: "Authenticate with SASL. Use it together with `tls` unless the network is private. " +
			"An empty `sasl {}` block takes everything from the environment: `" + kafka.EnvSASLMechanism + "`, `" +
			EnvSASLUsername + "` and `" + EnvSASLPassword + "`, or the `KAFKA_SASL_OAUTH_*` variables. Without the block, SASL is " +
			"still used, with the same fallbacks, when `" + kafka.EnvSASLMechanism + "`, `" + EnvSASLUsername + "`, `" + kafka.EnvSASLToken +
			"` or `" + kafka.EnvSASLTokenEndpointURL + "` is set, as in the `kafkascale` command. " +
			"`OAUTHBEARER` needs a token source: `token`, or `token_endpoint_url` with `client_id` and `client_secret` " +
			"(the OAuth 2.0 client-credentials grant). `AWS_MSK_IAM` takes the AWS SDK's default credential chain and " +
			"is untested against Amazon MSK (see the security guide).",
		Attributes: map[string]schema.Attribute{
			"mechanism": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "One of " + validators.QuoteList(kafka.Mechanisms) + ". Falls back to `" +
					kafka.EnvSASLMechanism + "`, then `SCRAM-SHA-512`.",
				Validators: []validator.String{stringvalidator.OneOf(kafka.Mechanisms...)},
			},
			"username": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "SASL username, for " + validators.QuoteList(passwordMechanisms) + ". Falls back to `" + EnvSASLUsername + "`.",
			},
			"password": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "SASL password, for " + validators.QuoteList(passwordMechanisms) + ". Falls back to `" + EnvSASLPassword +
					"`. Sensitive: never shown in plans nor logged, and not stored in the state.",
			},
			"token": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "`OAUTHBEARER` only: a bearer token (a JWT) sent as is. Falls back to `" + kafka.EnvSASLToken +
					"`. It is not renewed: once it expires, logins fail; use `token_endpoint_url` for tokens that renew. " +
					"Sensitive: never shown in plans nor logged; provider settings are never stored in the state.",
				Validators: []validator.String{
					stringvalidator.LengthAtLeast(1),
					stringvalidator.ConflictsWith(clientCredentials),
				},
			},
			"token_endpoint_url": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "`OAUTHBEARER` only: the identity provider's OAuth 2.0 token endpoint, from which tokens are " +
					"fetched with the client-credentials grant, cached, and fetched again before they expire. Falls back to `" +
					kafka.EnvSASLTokenEndpointURL + "` when `token` is unset too.",
				Validators: []validator.String{validators.URL()},
			},
			"client_id": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "`OAUTHBEARER` only: the client id sent to `token_endpoint_url`. Falls back to `" + kafka.EnvSASLClientID + "`.",
				Validators:          []validator.String{stringvalidator.AlsoRequires(clientCredentials)},
			},
			"client_secret": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "`OAUTHBEARER` only: the client secret sent to `token_endpoint_url`. Falls back to `" +
					kafka.EnvSASLClientSecret + "`. Sensitive: never shown in plans nor logged.",
				Validators: []validator.String{stringvalidator.AlsoRequires(clientCredentials)},
			},
			"scopes": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "`OAUTHBEARER` only: the scopes asked of `token_endpoint_url`, if the identity provider " +
					"wants any. Falls back to `" + kafka.EnvSASLScopes + "` (space-separated).",
				Validators: []validator.List{
					listvalidator.AlsoRequires(clientCredentials),
					listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1)),
				},
			},
		},
	}
}

// setAttributes lists the attributes the configuration sets (an unknown
// value counts: it will be set).
func (m *saslModel) setAttributes() map[string]bool {
	vals := map[string]attr.Value{
		"username": m.Username, "password": m.Password, "token": m.Token, "token_endpoint_url": m.TokenEndpointURL,
		"client_id": m.ClientID, "client_secret": m.ClientSecret, "scopes": m.Scopes,
	}
	set := map[string]bool{}
	for name, v := range vals {
		set[name] = !v.IsNull()
	}
	return set
}

// refuseForeignAttributes reports, at each attribute, a setting that the
// mechanism does not use: a token with SCRAM, a username with OAUTHBEARER.
// how says where the mechanism came from, for the message.
func (m *saslModel) refuseForeignAttributes(mechanism, how string, diags *diag.Diagnostics) {
	set := m.setAttributes()
	refuse := func(names []string, belongs string) {
		for _, name := range names {
			if set[name] {
				diags.AddAttributeError(path.Root("sasl").AtName(name), "SASL setting not used by "+mechanism,
					fmt.Sprintf("sasl.%s applies only to %s, but the mechanism is %s (%s). Remove sasl.%s, or set "+
						"sasl.mechanism to the mechanism it belongs to.", name, belongs, mechanism, how, name))
			}
		}
	}
	if !kafka.UsesPassword(mechanism) {
		refuse(passwordAttributes, strings.Join(passwordMechanisms, ", "))
	}
	if mechanism != kafka.MechanismOAuthBearer {
		refuse(oauthAttributes, kafka.MechanismOAuthBearer)
	}
}

// validateSASL checks what the configuration alone decides: when the
// mechanism is written in it, the attributes of other mechanisms are
// refused. What the environment may still supply is checked in Configure.
func validateSASL(m *saslModel, diags *diag.Diagnostics) {
	if m == nil || m.Mechanism.IsNull() || m.Mechanism.IsUnknown() {
		return
	}
	m.refuseForeignAttributes(m.Mechanism.ValueString(), "sasl.mechanism", diags)
}

// saslSettings converts the block, fills in the environment and reports
// what is still missing or does not fit the mechanism, at the attribute.
func saslSettings(ctx context.Context, m *saslModel, getenv func(string) string, diags *diag.Diagnostics) *kafka.SASLConfig {
	s := &kafka.SASLConfig{
		Mechanism: m.Mechanism.ValueString(),
		Username:  m.Username.ValueString(),
		Password:  m.Password.ValueString(),
		OAuth: kafka.OAuthConfig{
			Token:            m.Token.ValueString(),
			TokenEndpointURL: m.TokenEndpointURL.ValueString(),
			ClientID:         m.ClientID.ValueString(),
			ClientSecret:     m.ClientSecret.ValueString(),
		},
	}
	if !m.Scopes.IsNull() && !m.Scopes.IsUnknown() {
		diags.Append(m.Scopes.ElementsAs(ctx, &s.OAuth.Scopes, false)...)
	}
	how := "sasl.mechanism"
	if m.Mechanism.IsNull() {
		how = "the default"
		if v := getenv(kafka.EnvSASLMechanism); v != "" {
			how = "from " + kafka.EnvSASLMechanism
		}
	}
	s.FillDefaults(getenv)
	m.refuseForeignAttributes(s.Mechanism, how, diags)
	if diags.HasError() {
		return nil
	}
	sasl := path.Root("sasl")
	switch {
	case kafka.UsesPassword(s.Mechanism) && s.Username == "":
		diags.AddAttributeError(sasl.AtName("username"), "Missing SASL username",
			"Set sasl.username or the "+EnvSASLUsername+" environment variable.")
	case s.Mechanism == kafka.MechanismOAuthBearer && s.OAuth.Token == "" && s.OAuth.TokenEndpointURL == "":
		diags.AddAttributeError(sasl.AtName("token"), "Missing OAUTHBEARER token source",
			"OAUTHBEARER needs a token: set sasl.token (or "+kafka.EnvSASLToken+"), or sasl.token_endpoint_url with "+
				"client_id and client_secret (or "+kafka.EnvSASLTokenEndpointURL+" and its companions) for the client-credentials grant.")
	case s.Mechanism == kafka.MechanismOAuthBearer && s.OAuth.TokenEndpointURL != "" && s.OAuth.ClientID == "":
		diags.AddAttributeError(sasl.AtName("client_id"), "Missing OAuth client id",
			"The client-credentials grant against "+s.OAuth.TokenEndpointURL+" needs sasl.client_id or the "+kafka.EnvSASLClientID+" environment variable.")
	case s.Mechanism == kafka.MechanismOAuthBearer && s.OAuth.TokenEndpointURL != "" && s.OAuth.ClientSecret == "":
		diags.AddAttributeError(sasl.AtName("client_secret"), "Missing OAuth client secret",
			"The client-credentials grant against "+s.OAuth.TokenEndpointURL+" needs sasl.client_secret or the "+kafka.EnvSASLClientSecret+" environment variable.")
	}
	if diags.HasError() {
		return nil
	}
	return s
}
