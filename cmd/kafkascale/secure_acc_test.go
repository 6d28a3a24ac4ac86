package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafka"
	"github.com/kafkascale/terraform-provider-kafkascale/internal/kafkatest"
)

// runWithEnv runs the command with only the given connection variables set,
// so that the test's own environment cannot leak settings in.
func runWithEnv(t *testing.T, bin string, env []string, args ...string) cmdResult {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	return runCmd(t, cmd)
}

// The provider's connection settings reach a secured cluster: SASL_SSL
// and OAUTHBEARER with the provider's environment variables, mutual TLS
// with flags. The
// fresh cluster has no operations topic, so reaching it, authenticating
// and reading show as that message; a wrong password says so.
func TestAccSecuredClusterSettings(t *testing.T) {
	c := kafkatest.StartT(t, kafkatest.Options{Brokers: 1, Security: &kafkatest.Security{OAuthBearer: true}})
	a := c.Secure()
	bin := buildCommand(t)
	const noTopic = "kafkascale: no kafkascale operation has run on this cluster: topic __kafkascale_operations does not exist\n"

	sasl := []string{kafka.EnvBootstrapServers + "=" + strings.Join(c.SASLSSLBootstrap(), ","),
		kafka.EnvSASLUsername + "=" + a.RestrictedUser.Username, kafka.EnvSASLPassword + "=" + a.RestrictedUser.Password}
	if r := runWithEnv(t, bin, sasl, "operations", "--tls-ca-cert="+a.CACertFile); r.code != 1 || r.stderr != noTopic {
		t.Fatalf("SASL_SSL from the environment: exit %d, stderr %q", r.code, r.stderr)
	}
	// TLS from the environment as well, by the provider's rule: no flag.
	tlsEnv := append(append([]string(nil), sasl...), kafka.EnvTLSCACert+"="+a.CACertFile)
	if r := runWithEnv(t, bin, tlsEnv, "operations"); r.code != 1 || r.stderr != noTopic {
		t.Fatalf("SASL_SSL and its CA from the environment: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runWithEnv(t, bin, nil, "operations", "--bootstrap-servers="+strings.Join(c.SSLBootstrap(), ","),
		"--tls-ca-cert="+a.CACertFile, "--tls-client-cert="+a.ClientCertFile, "--tls-client-key="+a.ClientKeyFile); r.code != 1 || r.stderr != noTopic {
		t.Fatalf("mutual TLS from flags: exit %d, stderr %q", r.code, r.stderr)
	}
	// OAUTHBEARER from the environment alone, as the provider's sasl {}.
	oauth := []string{kafka.EnvBootstrapServers + "=" + strings.Join(c.OAuthBootstrap(), ","), kafka.EnvSASLMechanism + "=OAUTHBEARER",
		kafka.EnvSASLToken + "=" + kafkatest.UnsecuredToken(a.SuperUser.Username, time.Hour)}
	if r := runWithEnv(t, bin, oauth, "operations", "--tls-ca-cert="+a.CACertFile); r.code != 1 || r.stderr != noTopic {
		t.Fatalf("OAUTHBEARER from the environment: exit %d, stderr %q", r.code, r.stderr)
	}
	start := time.Now()
	r := runWithEnv(t, bin, sasl, "operations", "--tls-ca-cert="+a.CACertFile, "--sasl-password=wrong")
	if r.code != 1 || !strings.Contains(r.stderr, `SASL authentication of user "`+a.RestrictedUser.Username+`" (SCRAM-SHA-512) failed`) {
		t.Fatalf("wrong password: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Logf("wrong password reported in %s: %s", time.Since(start).Round(time.Millisecond), r.stderr)
}
