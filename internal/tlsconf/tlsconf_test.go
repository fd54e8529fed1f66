package tlsconf

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// handshake runs one TLS handshake over a loopback TCP connection and
// returns the common name of the certificate the client saw.
func handshake(t *testing.T, server, client *tls.Config) (string, error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvErr := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		srvErr <- c.(*tls.Conn).Handshake()
	}()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), client)
	if err != nil {
		<-srvErr
		return "", err
	}
	defer c.Close()
	if err := <-srvErr; err != nil {
		return "", err
	}
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func testCA(t *testing.T) (*CA, string) {
	t.Helper()
	now := time.Now().Add(-time.Hour)
	ca, err := NewCA(now, now.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := ca.WriteCert(file); err != nil {
		t.Fatal(err)
	}
	return ca, file
}

func issue(t *testing.T, ca *CA, name, certFile, keyFile string, notBefore, notAfter time.Time) {
	t.Helper()
	if err := ca.Issue(name, []string{"127.0.0.1", "localhost"}, notBefore, notAfter, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
}

func TestGeneratedFilesHandshakeWithMutualTLS(t *testing.T) {
	g, err := Generate(t.TempDir(), []string{"localhost", "127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ServerConfig{CertFile: g.ServerCert, KeyFile: g.ServerKey, CAFile: g.CA, ClientAuth: true}.Server()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ClientConfig{CAFile: g.CA, CertFile: g.ClientCert, KeyFile: g.ClientKey}.Client()
	if err != nil {
		t.Fatal(err)
	}
	cn, err := handshake(t, srv, cl)
	if err != nil || cn != "raftmq server" {
		t.Fatalf("handshake: cn %q, err %v", cn, err)
	}
	noCert, _ := ClientConfig{CAFile: g.CA}.Client()
	if _, err := handshake(t, srv, noCert); err == nil {
		t.Fatal("a client without a certificate passed mutual TLS")
	}
}

func TestServerReloadsReplacedCertificate(t *testing.T) {
	ca, caFile := testCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "s.pem"), filepath.Join(dir, "s-key.pem")
	now := time.Now().Add(-time.Minute)
	issue(t, ca, "first", cert, key, now, now.Add(time.Hour))
	srv, err := ServerConfig{CertFile: cert, KeyFile: key, CheckInterval: -1}.Server()
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := ClientConfig{CAFile: caFile}.Client()
	if cn, err := handshake(t, srv, cl); err != nil || cn != "first" {
		t.Fatalf("before: cn %q, err %v", cn, err)
	}
	issue(t, ca, "second", cert, key, now, now.Add(time.Hour))
	if cn, err := handshake(t, srv, cl); err != nil || cn != "second" {
		t.Fatalf("after replacing the files: cn %q, err %v", cn, err)
	}
}

func TestReloadChecksAtMostOncePerInterval(t *testing.T) {
	ca, _ := testCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "s.pem"), filepath.Join(dir, "s-key.pem")
	now := time.Now().Add(-time.Minute)
	issue(t, ca, "first", cert, key, now, now.Add(time.Hour))
	kp, err := newKeyPair(cert, key, time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	kp.r.now = func() time.Time { return clock }
	issue(t, ca, "second", cert, key, now, now.Add(time.Hour))
	if cn := kp.current().Leaf.Subject.CommonName; cn != "first" {
		t.Fatalf("within the interval: %q, want the loaded certificate", cn)
	}
	clock = clock.Add(1100 * time.Millisecond)
	if cn := kp.current().Leaf.Subject.CommonName; cn != "second" {
		t.Fatalf("after the interval: %q, want the new certificate", cn)
	}
}

func TestBadReplacementKeepsOldCertificate(t *testing.T) {
	ca, caFile := testCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "s.pem"), filepath.Join(dir, "s-key.pem")
	now := time.Now().Add(-time.Minute)
	issue(t, ca, "good", cert, key, now, now.Add(time.Hour))
	var logs strings.Builder
	log := hclog.New(&hclog.LoggerOptions{Output: &logs})
	srv, err := ServerConfig{CertFile: cert, KeyFile: key, CheckInterval: -1, Logger: log}.Server()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\ngarbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl, _ := ClientConfig{CAFile: caFile}.Client()
	if cn, err := handshake(t, srv, cl); err != nil || cn != "good" {
		t.Fatalf("after a bad replacement: cn %q, err %v; want the old certificate", cn, err)
	}
	if !strings.Contains(logs.String(), "reload failed") {
		t.Fatalf("bad replacement not logged: %s", logs.String())
	}
	// An expired replacement is as bad.
	issue(t, ca, "expired", cert, key, now.Add(-2*time.Hour), now.Add(-time.Hour))
	if cn, err := handshake(t, srv, cl); err != nil || cn != "good" {
		t.Fatalf("after an expired replacement: cn %q, err %v", cn, err)
	}
	// A good one is taken again.
	issue(t, ca, "fixed", cert, key, now, now.Add(time.Hour))
	if cn, err := handshake(t, srv, cl); err != nil || cn != "fixed" {
		t.Fatalf("after fixing the files: cn %q, err %v", cn, err)
	}
}

func TestLoadErrorsAreClear(t *testing.T) {
	ca, caFile := testCA(t)
	dir := t.TempDir()
	now := time.Now()
	expCert, expKey := filepath.Join(dir, "e.pem"), filepath.Join(dir, "e-key.pem")
	issue(t, ca, "old", expCert, expKey, now.Add(-2*time.Hour), now.Add(-time.Hour))
	okCert, okKey := filepath.Join(dir, "ok.pem"), filepath.Join(dir, "ok-key.pem")
	issue(t, ca, "ok", okCert, okKey, now.Add(-time.Hour), now.Add(time.Hour))
	garbage := filepath.Join(dir, "garbage.pem")
	_ = os.WriteFile(garbage, []byte("not pem"), 0o644)
	for _, tc := range []struct {
		name string
		cfg  ServerConfig
		want error
		text string
	}{
		{"missing cert", ServerConfig{CertFile: filepath.Join(dir, "none.pem"), KeyFile: okKey}, ErrNoFile, "none.pem"},
		{"invalid cert", ServerConfig{CertFile: garbage, KeyFile: okKey}, ErrInvalid, "garbage.pem"},
		{"key of another cert", ServerConfig{CertFile: okCert, KeyFile: expKey}, ErrInvalid, "ok.pem"},
		{"expired", ServerConfig{CertFile: expCert, KeyFile: expKey}, ErrExpired, "expired at"},
		{"invalid CA", ServerConfig{CertFile: okCert, KeyFile: okKey, CAFile: garbage, ClientAuth: true}, ErrInvalid, "no PEM certificate"},
		{"client auth without CA", ServerConfig{CertFile: okCert, KeyFile: okKey, ClientAuth: true}, ErrConfig, "CA"},
		{"no key", ServerConfig{CertFile: okCert}, ErrConfig, "key"},
	} {
		_, err := tc.cfg.Server()
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: %v, want %v mentioning %q", tc.name, err, tc.want, tc.text)
		}
	}
	if _, err := (ClientConfig{CAFile: caFile, CertFile: okCert}).Client(); !errors.Is(err, ErrConfig) {
		t.Errorf("client cert without key: %v", err)
	}
}

func TestClientRefusesExpiredServerCertificate(t *testing.T) {
	ca, caFile := testCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "s.pem"), filepath.Join(dir, "s-key.pem")
	now := time.Now()
	issue(t, ca, "soon", cert, key, now.Add(-time.Hour), now.Add(time.Hour))
	srv, err := ServerConfig{CertFile: cert, KeyFile: key}.Server()
	if err != nil {
		t.Fatal(err)
	}
	// The server loaded a valid certificate; the client's clock says it
	// has since expired.
	cl, _ := ClientConfig{CAFile: caFile}.Client()
	cl.Time = func() time.Time { return now.Add(2 * time.Hour) }
	_, err = handshake(t, srv, cl)
	if err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("handshake with an expired server certificate: %v", err)
	}
}
