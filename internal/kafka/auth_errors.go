package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// AuthKind is the layer whose handshake failed.
type AuthKind string

// The kinds of AuthError.
const (
	AuthTLS  AuthKind = "TLS"
	AuthSASL AuthKind = "SASL"
	// AuthNotTLS: tls is configured, but the broker closed the connection
	// during the handshake, as a plaintext (or SASL_PLAINTEXT) listener does.
	AuthNotTLS AuthKind = "not TLS"
	// AuthNotSASL: sasl is configured, but the broker answered the SASL
	// handshake as a listener without SASL does (ILLEGAL_SASL_STATE): no
	// credential was checked.
	AuthNotSASL AuthKind = "not SASL"
)

// AuthError says that the brokers answered but refused this client, or
// this client refused them: a TLS handshake or a SASL authentication
// failed. Neither gets better by retrying, so it is reported at once
// rather than as an unreachable cluster after the request timeout.
type AuthError struct {
	Kind AuthKind
	// Addr is the broker whose handshake failed, when known.
	Addr string
	// User and Mechanism are the SASL settings, for AuthSASL; User is
	// empty for the mechanisms without one (OAUTHBEARER, AWS_MSK_IAM).
	User, Mechanism string
	// Credential names what was presented ("a static token", "user
	// \"admin\""), never the secret itself.
	Credential string
	Err        error
}

func (e *AuthError) Error() string {
	switch e.Kind {
	case AuthNotTLS:
		return fmt.Sprintf("the broker closed the connection during the TLS handshake, as a plaintext listener does: %v", e.Err)
	case AuthNotSASL:
		return fmt.Sprintf("the broker answered the SASL handshake (%s) as a listener without SASL does: %v", e.Mechanism, e.Err)
	}
	if e.Kind == AuthSASL {
		var ce *CredentialError
		switch {
		case errors.As(e.Err, &ce):
			return fmt.Sprintf("SASL authentication (%s) failed before any broker was asked: could not obtain %s: %v",
				e.Mechanism, ce.Source, ce.Err)
		case e.Mechanism == MechanismOAuthBearer:
			return fmt.Sprintf("SASL authentication (%s) with %s failed: the broker refused the token "+
				"(expired, not yet valid, or not signed by a key it trusts): %v", e.Mechanism, e.Credential, e.Err)
		case e.Mechanism == MechanismAWSMSKIAM:
			return fmt.Sprintf("SASL authentication (%s) with %s failed: the broker refused them: %v",
				e.Mechanism, e.Credential, e.Err)
		}
		return fmt.Sprintf("SASL authentication of user %q (%s) failed: the broker refused the username or password: %v",
			e.User, e.Mechanism, e.Err)
	}
	addr := e.Addr
	if addr == "" {
		addr = "the broker"
	}
	return fmt.Sprintf("TLS handshake with %s failed: %s", addr, tlsCause(e.Err))
}

func (e *AuthError) Unwrap() error { return e.Err }

// tlsCause is the part of a TLS error a user can act on: the certificate
// problem itself (x509: ...) or the alert the broker sent.
func tlsCause(err error) string {
	var cve *tls.CertificateVerificationError
	if errors.As(err, &cve) && cve.Err != nil {
		return cve.Err.Error()
	}
	var alert tls.AlertError
	if errors.As(err, &alert) {
		return "the broker refused this client's certificate (TLS alert: " + alert.Error() + "); check tls.client_cert and that the brokers trust its CA"
	}
	if isRemoteAlert(err) {
		var op *net.OpError
		errors.As(err, &op)
		return "the broker refused this client's certificate (" + op.Err.Error() + "); check tls.client_cert and tls.client_key, and that the brokers trust their CA"
	}
	return strings.TrimPrefix(err.Error(), "unable to dial: ")
}

// authError classifies err as a TLS or SASL failure, or returns nil.
func (c *Client) authError(err error) *AuthError {
	var ae *AuthError
	if errors.As(err, &ae) {
		return ae
	}
	if c.cfg.TLS != nil && isNotTLSListener(err) {
		return &AuthError{Kind: AuthNotTLS, Err: err}
	}
	if c.cfg.SASL != nil && errors.Is(err, kerr.IllegalSaslState) {
		return &AuthError{Kind: AuthNotSASL, Mechanism: c.cfg.SASL.Mechanism, Err: err}
	}
	var ce *CredentialError
	if (isSASLFailure(err) || errors.As(err, &ce)) && c.cfg.SASL != nil {
		s := c.cfg.SASL
		return &AuthError{Kind: AuthSASL, User: s.Username, Mechanism: s.Mechanism, Credential: s.credential(), Err: err}
	}
	if isTLSFailure(err) {
		ae := &AuthError{Kind: AuthTLS, Err: err}
		if f := c.dialFailure.Load(); f != nil && isTLSFailure(f.err) {
			ae.Addr = f.addr
		}
		return ae
	}
	return nil
}

// isNotTLSListener is franz-go's guess, from a connection closed right after
// the dial, that the client speaks TLS to a listener that does not.
func isNotTLSListener(err error) bool {
	var eof *kgo.ErrFirstReadEOF
	return errors.As(err, &eof) && strings.Contains(eof.Error(), "TLS")
}

func isSASLFailure(err error) bool {
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState)
}

func isTLSFailure(err error) bool {
	var cve *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var alert tls.AlertError
	var rhe tls.RecordHeaderError
	return errors.As(err, &cve) || errors.As(err, &unknownAuthority) || errors.As(err, &hostname) ||
		errors.As(err, &invalid) || errors.As(err, &alert) || errors.As(err, &rhe) || isRemoteAlert(err)
}

// isRemoteAlert is an alert the broker sent over TCP, such as "bad
// certificate" from a mutual-TLS listener given no client certificate. Go
// reports it as a net.OpError "remote error", not as a tls.AlertError.
func isRemoteAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error" && strings.HasPrefix(op.Err.Error(), "tls: ")
}

type dialFailure struct {
	addr string
	err  error
}

// connectHook records failed connections, with the address franz-go's
// error leaves out.
type connectHook struct{ c *Client }

var _ kgo.HookBrokerConnect = connectHook{}

func (h connectHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.c.dialFailure.Store(&dialFailure{addr: net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port)), err: err})
	}
}
