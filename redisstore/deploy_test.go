package redisstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/internal/redistest"
)

// The contract over a unix socket, through Sentinel, and over TLS with a
// private CA and a client certificate.

func TestUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "redis.sock")
	redistest.Start(t, "unixsocket "+sock, "unixsocketperm 700")
	s, err := Open("unix://"+sock+"?db=2", testOptions)
	require.NoError(t, err)
	defer s.Close()
	backendtest.Run(t, s, backendtest.ServerMillis)
}

func TestSentinel(t *testing.T) {
	master := redistest.Start(t)
	sentinel := redistest.StartSentinel(t, master)
	s, err := Open("redis+sentinel://"+sentinel.Addr+"?master_name=mymaster&read_timeout=2s", testOptions)
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, Sentinel, s.mode)
	backendtest.Run(t, s, backendtest.ServerMillis)
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, dir, "ca", nil, nil)
	newCert(t, dir, "server", ca, caKey)
	newCert(t, dir, "client", ca, caKey)
	f := func(name string) string { return filepath.Join(dir, name) }
	port := redistest.FreePort(t)
	redistest.Start(t, "tls-port "+strconv.Itoa(port), "tls-cert-file "+f("server.pem"),
		"tls-key-file "+f("server-key.pem"), "tls-ca-cert-file "+f("ca.pem"), "tls-auth-clients yes")

	url := "rediss://127.0.0.1:" + strconv.Itoa(port) + "?tls_ca=" + f("ca.pem") +
		"&tls_cert=" + f("client.pem") + "&tls_key=" + f("client-key.pem")
	s, err := Open(url, testOptions)
	require.NoError(t, err)
	defer s.Close()
	backendtest.Run(t, s, backendtest.ServerMillis)

	// Without the client certificate the server refuses: an error, not a miss.
	bare, err := Open("rediss://127.0.0.1:"+strconv.Itoa(port)+"?tls_ca="+f("ca.pem")+"&dial_timeout=1s", testOptions)
	require.NoError(t, err)
	defer bare.Close()
	_, _, err = bare.GetInto("k", nil)
	require.Error(t, err)
}

// newCert writes name.pem and name-key.pem to dir: a CA if parent is nil,
// else a certificate for 127.0.0.1 signed by parent.
func newCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+"-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return cert, key
}

// rediss:// to a server that does not serve TLS on that port: the error
// says the TLS handshake with that address failed, not only "context
// deadline exceeded", and is still a failure to reach the server.
func TestTLSToAPlainServerNamesTheHandshake(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, "rediss://"+srv.Addr+"?dial_timeout=300ms")
	_, _, err := s.GetInto("k", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TLS handshake with "+srv.Addr)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = s.SetNX("lock", []byte("A"), time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TLS handshake with "+srv.Addr)
}
