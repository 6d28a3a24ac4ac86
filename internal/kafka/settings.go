package kafka

import "strings"

// Environment variables that supply connection settings the configuration
// leaves out. The provider and the kafkascale command read the same ones,
// so a shell set up for one works for the other.
const (
	EnvBootstrapServers = "KAFKA_BOOTSTRAP_SERVERS"
	EnvSASLUsername     = "KAFKA_SASL_USERNAME"
	EnvSASLPassword     = "KAFKA_SASL_PASSWORD" //nolint:gosec // a variable's name, not a credential
)

// SplitServers reads a comma-separated list of host:port, as
// EnvBootstrapServers holds it; blanks are dropped.
func SplitServers(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// FillDefaults completes SASL settings the configuration left out: the
// mechanism defaults to SCRAM-SHA-512, and the username and password fall
// back to EnvSASLUsername and EnvSASLPassword as getenv reads them. The
// caller reports a username still empty, in its own terms (an attribute,
// a flag).
func (s *SASLConfig) FillDefaults(getenv func(string) string) {
	if s.Mechanism == "" {
		s.Mechanism = MechanismScramSHA512
	}
	if s.Username == "" {
		s.Username = getenv(EnvSASLUsername)
	}
	if s.Password == "" {
		s.Password = getenv(EnvSASLPassword)
	}
}
