package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Generated names the files Generate writes, all PEM.
type Generated struct {
	CA                    string // the CA certificate, to verify both sides
	ServerCert, ServerKey string // for servers and raft peers
	ClientCert, ClientKey string // for clients doing mutual TLS
}

// Generate writes a throwaway CA and a server and a client certificate it
// signed (ECDSA P-256) into dir, for `raftmq dev --tls` and tests. The
// server certificate names hosts (DNS names or IPs) and may also be used
// as a client certificate, so raft peers can share it. Keys are written
// 0600. Nothing here is meant for production: the CA key is discarded.
func Generate(dir string, hosts []string, validFor time.Duration) (Generated, error) {
	g := Generated{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"),
		ServerKey:  filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client-key.pem"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return g, fmt.Errorf("tlsconf: generate: %w", err)
	}
	now := time.Now().Add(-time.Minute)
	ca, err := NewCA(now, now.Add(validFor))
	if err != nil {
		return g, err
	}
	if err := ca.WriteCert(g.CA); err != nil {
		return g, err
	}
	if err := ca.Issue("raftmq server", hosts, now, now.Add(validFor), g.ServerCert, g.ServerKey); err != nil {
		return g, err
	}
	if err := ca.Issue("raftmq client", nil, now, now.Add(validFor), g.ClientCert, g.ClientKey); err != nil {
		return g, err
	}
	return g, nil
}

// CA is a throwaway certificate authority held in memory.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed ECDSA P-256 CA valid from notBefore to
// notAfter.
func NewCA(notBefore, notAfter time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: generate CA: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "raftmq throwaway CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: generate CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: generate CA: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// WriteCert writes the CA's certificate as PEM.
func (ca *CA) WriteCert(file string) error {
	return writePEM(file, "CERTIFICATE", ca.Cert.Raw, 0o644)
}

// Issue writes a certificate for name and hosts, signed by the CA, valid
// from notBefore to notAfter, usable for both server and client
// authentication, and its new ECDSA P-256 key.
func (ca *CA) Issue(name string, hosts []string, notBefore, notAfter time.Time, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("tlsconf: issue %s: %w", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return fmt.Errorf("tlsconf: issue %s: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("tlsconf: issue %s: %w", name, err)
	}
	if err := writePEM(keyFile, "EC PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(certFile, "CERTIFICATE", der, 0o644)
}

// writePEM writes through a temporary file and a rename, so a reader
// never sees half a file.
func writePEM(name, typ string, der []byte, perm os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), perm); err != nil {
		return fmt.Errorf("tlsconf: write %s: %w", name, err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("tlsconf: write %s: %w", name, err)
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}
