package kafkatest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Listener names of a secured cluster's brokers, besides PLAINTEXT.
const (
	ListenerSASLSSL = "SASL_SSL"
	ListenerSSL     = "SSL"
	// ListenerOAuth is a SASL_SSL listener for OAUTHBEARER, present only
	// with Security.OAuthBearer.
	ListenerOAuth = "OAUTH"
)

// Security turns a cluster into a secured one (Options.Security): next to
// the PLAINTEXT listener, every broker gets a SASL_SSL listener
// (SCRAM-SHA-512) and an SSL listener that requires a client certificate,
// and ACLs are enforced by the StandardAuthorizer on brokers and the
// controller.
//
// The PLAINTEXT listener stays, for the brokers among themselves, the
// controller and this package's own client (Cluster.Client, the readiness
// checks): its principal, User:ANONYMOUS, is a super user. It is the
// harness's back door, so tests that mean to exercise security must use
// SASLSSLBootstrap or SSLBootstrap, never BootstrapServers.
//
// The certificates are made at start in Go: one CA, one certificate per
// broker valid for 127.0.0.1 and localhost, and one client certificate.
// The SCRAM users are written into the metadata when the storage is
// formatted (StorageTool format --add-scram). The zero value is usable.
type Security struct {
	// SuperUser is the SCRAM user with every right (a super user), default
	// "admin". The client certificate's CN maps to the same user.
	SuperUser string
	// RestrictedUser is a SCRAM user allowed only what reading needs,
	// default "reader": DESCRIBE and DESCRIBE_CONFIGS on the cluster,
	// DESCRIBE, DESCRIBE_CONFIGS and READ on every topic, DESCRIBE on every
	// group. It cannot create, alter or delete anything.
	RestrictedUser string
	// OAuthBearer adds a third listener per broker (OAuthBootstrap):
	// SASL_SSL with OAUTHBEARER only, validated by Kafka's built-in
	// unsecured validator, which accepts an unsigned JWT (alg "none",
	// UnsecuredToken) and takes its "sub" claim as the principal. Off by
	// default, so clusters that do not need it do not open it.
	OAuthBearer bool
}

// Credentials are a SCRAM-SHA-512 user's.
type Credentials struct {
	Username string
	Password string
}

// SecureAccess is how a test reaches a secured cluster.
type SecureAccess struct {
	// CACertPEM signed every broker's certificate; CACertFile holds it.
	CACertPEM  string
	CACertFile string
	// ClientCertPEM and ClientKeyPEM (PKCS#8) are the client certificate
	// for mutual TLS, whose CN maps to SuperUser; also in the two files.
	ClientCertPEM  string
	ClientKeyPEM   string
	ClientCertFile string
	ClientKeyFile  string
	// OtherCACertPEM is a second CA that signed nothing the cluster trusts
	// or presents: a client that trusts only it must fail verification.
	OtherCACertPEM string
	SuperUser      Credentials
	RestrictedUser Credentials
}

// secureState is a secured cluster's material, made once at start.
type secureState struct {
	access     SecureAccess
	ca         *x509.Certificate
	caKey      *ecdsa.PrivateKey
	truststore string // the CA, as the brokers' PEM truststore
}

// setupSecurity makes the CA, the client certificate and the passwords.
func (c *Cluster) setupSecurity() error {
	sec := c.opts.Security
	if sec == nil {
		return nil
	}
	if sec.SuperUser == "" {
		sec.SuperUser = "admin"
	}
	if sec.RestrictedUser == "" {
		sec.RestrictedUser = "reader"
	}
	dir := filepath.Join(c.dir, "tls")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, caKey, caPEM, err := newCA("kafkatest CA")
	if err != nil {
		return err
	}
	_, _, otherPEM, err := newCA("kafkatest untrusted CA")
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := issue(ca, caKey, sec.SuperUser, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	s := &secureState{ca: ca, caKey: caKey, truststore: filepath.Join(dir, "ca.pem")}
	s.access = SecureAccess{
		CACertPEM: string(caPEM), CACertFile: s.truststore,
		ClientCertPEM: string(certPEM), ClientKeyPEM: string(keyPEM),
		ClientCertFile: filepath.Join(dir, "client.pem"), ClientKeyFile: filepath.Join(dir, "client-key.pem"),
		OtherCACertPEM: string(otherPEM),
		SuperUser:      Credentials{Username: sec.SuperUser, Password: randomPassword()},
		RestrictedUser: Credentials{Username: sec.RestrictedUser, Password: randomPassword()},
	}
	for path, b := range map[string][]byte{s.truststore: caPEM, s.access.ClientCertFile: certPEM, s.access.ClientKeyFile: keyPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	c.secure = s
	return nil
}

// Secure returns how to reach a secured cluster, or nil for a plaintext one.
func (c *Cluster) Secure() *SecureAccess {
	if c.secure == nil {
		return nil
	}
	a := c.secure.access
	return &a
}

// SASLSSLBootstrap lists the SASL_SSL listeners of the running brokers.
func (c *Cluster) SASLSSLBootstrap() []string { return c.listenerAddrs(ListenerSASLSSL) }

// SSLBootstrap lists the mutual-TLS SSL listeners of the running brokers.
func (c *Cluster) SSLBootstrap() []string { return c.listenerAddrs(ListenerSSL) }

// OAuthBootstrap lists the OAUTHBEARER listeners of the running brokers;
// empty unless Security.OAuthBearer.
func (c *Cluster) OAuthBootstrap() []string { return c.listenerAddrs(ListenerOAuth) }

// UnsecuredToken is an unsigned JWT (alg "none") for sub, issued now and
// expiring after lifetime (a negative lifetime gives an expired token):
// what the OAuthBearer listener's unsecured validator accepts in place of
// an identity provider's signed token.
func UnsecuredToken(sub string, lifetime time.Duration) string {
	now := time.Now()
	iat := now
	if lifetime < 0 {
		iat = now.Add(2 * lifetime) // issued before it expired
	}
	enc := base64.RawURLEncoding.EncodeToString
	header := enc([]byte(`{"alg":"none"}`))
	claims := enc(fmt.Appendf(nil, `{"sub":%q,"iat":%d,"exp":%d}`, sub, iat.Unix(), now.Add(lifetime).Unix()))
	return header + "." + claims + "."
}

func (c *Cluster) listenerAddrs(name string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var addrs []string
	for _, n := range c.sortedBrokersLocked() {
		if n.proc != nil && n.extraPorts[name] != 0 {
			addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(n.extraPorts[name]))
		}
	}
	return addrs
}

// TLSConfig trusts the cluster's CA; with withClientCert it also presents
// the client certificate.
func (a *SecureAccess) TLSConfig(withClientCert bool) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(a.CACertPEM)) {
		return nil, fmt.Errorf("kafkatest: the CA certificate does not parse")
	}
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if withClientCert {
		pair, err := tls.X509KeyPair([]byte(a.ClientCertPEM), []byte(a.ClientKeyPEM))
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// SuperUserClient is a franz-go client over SASL_SSL as the super user, for
// tests that want to act as a real, authenticated administrator. The
// caller closes it.
func (c *Cluster) SuperUserClient(opts ...kgo.Opt) (*kgo.Client, *kadm.Client, error) {
	a := c.Secure()
	if a == nil {
		return nil, nil, fmt.Errorf("kafkatest: the cluster is not secured (Options.Security is nil)")
	}
	tc, err := a.TLSConfig(false)
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.SASLSSLBootstrap()...),
		kgo.DialTLSConfig(tc),
		kgo.SASL(scram.Auth{User: a.SuperUser.Username, Pass: a.SuperUser.Password}.AsSha512Mechanism()),
	}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	return cl, kadm.NewClient(cl), nil
}

// prepareSecure gives a broker its secure listeners' ports (kept across
// restarts) and its key and certificate.
func (c *Cluster) prepareSecure(n *node) error {
	if c.secure == nil || n.role != roleBroker {
		return nil
	}
	c.mu.Lock()
	have := n.extraPorts != nil
	c.mu.Unlock()
	if !have {
		ports := map[string]int{}
		listeners := []string{ListenerSASLSSL, ListenerSSL}
		if c.opts.Security.OAuthBearer {
			listeners = append(listeners, ListenerOAuth)
		}
		for _, l := range listeners {
			p, err := freePort()
			if err != nil {
				return err
			}
			ports[l] = p
		}
		c.mu.Lock()
		n.extraPorts = ports
		c.mu.Unlock()
	}
	if _, err := os.Stat(n.keystorePath()); err == nil {
		return nil
	}
	cert, key, err := issue(c.secure.ca, c.secure.caKey, "broker-"+strconv.Itoa(int(n.id)),
		[]net.IP{net.IPv4(127, 0, 0, 1)}, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	// A PEM keystore holds the key first, then the certificate chain.
	return os.WriteFile(n.keystorePath(), append(key, cert...), 0o600)
}

func (n *node) keystorePath() string { return filepath.Join(n.dir, "keystore.pem") }

// secureProperties adds the listeners, TLS, SASL and ACL settings to a
// node's properties. Options' properties are applied after, so a test can
// still override any of them.
func (c *Cluster) secureProperties(n *node, p map[string]string) {
	if c.secure == nil {
		return
	}
	a := c.secure.access
	p["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	p["super.users"] = "User:ANONYMOUS;User:" + a.SuperUser.Username
	p["allow.everyone.if.no.acl.found"] = "false"
	if n.role != roleBroker {
		return
	}
	sasl := "127.0.0.1:" + strconv.Itoa(n.extraPorts[ListenerSASLSSL])
	ssl := "127.0.0.1:" + strconv.Itoa(n.extraPorts[ListenerSSL])
	listeners := "PLAINTEXT://" + n.addr() + "," + ListenerSASLSSL + "://" + sasl + "," + ListenerSSL + "://" + ssl
	protocols := "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL"
	if port := n.extraPorts[ListenerOAuth]; port != 0 {
		listeners += "," + ListenerOAuth + "://127.0.0.1:" + strconv.Itoa(port)
		protocols += "," + ListenerOAuth + ":SASL_SSL"
		// With no server callback handler configured, Kafka validates
		// OAUTHBEARER tokens with OAuthBearerUnsecuredValidatorCallbackHandler:
		// an unsigned JWT whose "sub" is the principal. The login module is
		// required by the listener's JAAS section even though the broker
		// never logs in through it.
		p["listener.name.oauth.sasl.enabled.mechanisms"] = "OAUTHBEARER"
		p["listener.name.oauth.oauthbearer.sasl.jaas.config"] = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"" + a.SuperUser.Username + "\";"
	}
	p["listeners"] = listeners
	p["advertised.listeners"] = listeners
	p["listener.security.protocol.map"] = protocols
	p["sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
	p["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
	p["ssl.keystore.type"] = "PEM"
	p["ssl.keystore.location"] = n.keystorePath()
	p["ssl.truststore.type"] = "PEM"
	p["ssl.truststore.location"] = c.secure.truststore
	p["listener.name.ssl.ssl.client.auth"] = "required"
	// A certificate's principal is its CN, so that the client certificate
	// is the same user as the SCRAM super user.
	p["ssl.principal.mapping.rules"] = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"
}

// scramFormatArgs adds the SCRAM users to the bootstrap metadata.
func (c *Cluster) scramFormatArgs(n *node) []string {
	if c.secure == nil || n.role != roleController {
		return nil
	}
	var args []string
	for _, u := range []Credentials{c.secure.access.SuperUser, c.secure.access.RestrictedUser} {
		args = append(args, "--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", u.Username, u.Password))
	}
	return args
}

// grantRestricted gives the restricted user its read-only ACLs, through
// the harness's super-user client.
func (c *Cluster) grantRestricted(ctx context.Context) error {
	if c.secure == nil {
		return nil
	}
	principal := "User:" + c.secure.access.RestrictedUser.Username
	builders := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow(principal).AllowHosts("*").Clusters().
			Operations(kadm.OpDescribe, kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow(principal).AllowHosts("*").Topics("*").
			Operations(kadm.OpDescribe, kadm.OpDescribeConfigs, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow(principal).AllowHosts("*").Groups("*").
			Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
	}
	for _, b := range builders {
		results, err := c.admin.CreateACLs(ctx, b)
		if err != nil {
			return fmt.Errorf("kafkatest: granting %s its ACLs: %w", principal, err)
		}
		for _, r := range results {
			if r.Err != nil {
				return fmt.Errorf("kafkatest: granting %s %v on %v %s: %w", principal, r.Operation, r.Type, r.Name, r.Err)
			}
		}
	}
	// ACLs reach every broker through the metadata log; wait until the
	// restricted user sees a broker, so a test's first request is judged
	// by them.
	return c.waitACLs(ctx)
}

func (c *Cluster) waitACLs(ctx context.Context) error {
	a := c.secure.access
	tc, err := a.TLSConfig(false)
	if err != nil {
		return err
	}
	for _, addr := range c.SASLSSLBootstrap() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tc),
			kgo.SASL(scram.Auth{User: a.RestrictedUser.Username, Pass: a.RestrictedUser.Password}.AsSha512Mechanism()))
		if err != nil {
			return err
		}
		for {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.IncludeClusterAuthorizedOperations = true
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := req.RequestWith(rctx, cl)
			cancel()
			if err == nil && resp.ClusterAuthorizedOperations > 0 {
				break
			}
			if err == nil {
				err = fmt.Errorf("no authorized operations on the cluster yet")
			}
			if serr := sleepCtx(ctx, pollInterval); serr != nil {
				cl.Close()
				return fmt.Errorf("kafkatest: the restricted user's ACLs did not reach broker %s: %w (last: %v)", addr, serr, err)
			}
		}
		cl.Close()
	}
	return nil
}

func randomPassword() string {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "pw-" + hex.EncodeToString(b[:])
}

func newCA(cn string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"kafkascale tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// issue signs a leaf certificate and returns it and its PKCS#8 key as PEM.
func issue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, ips []net.IP, usage ...x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"kafkascale tests"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		IPAddresses:  ips,
	}
	if len(ips) > 0 {
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}
