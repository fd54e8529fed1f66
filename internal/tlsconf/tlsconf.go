package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Sentinel errors, wrapped with the file and the detail.
var (
	// ErrNoFile: a configured file does not exist or cannot be read.
	ErrNoFile = errors.New("tlsconf: cannot read file")
	// ErrInvalid: a file is not the PEM it should be, or the key does not
	// match the certificate.
	ErrInvalid = errors.New("tlsconf: invalid file")
	// ErrExpired: the certificate is past its NotAfter or before its
	// NotBefore.
	ErrExpired = errors.New("tlsconf: certificate not valid now")
	// ErrConfig: the configuration itself is inconsistent (a key without
	// a certificate, client auth without a CA).
	ErrConfig = errors.New("tlsconf: bad configuration")
)

// DefaultCheckInterval is how often, at most, the files are looked at
// again for a change.
const DefaultCheckInterval = time.Second

// ServerConfig describes a server's TLS: its certificate and, for mutual
// TLS, the CA its clients' certificates must chain to.
type ServerConfig struct {
	// CertFile and KeyFile are the PEM certificate (chain) and private
	// key. Both required.
	CertFile, KeyFile string
	// CAFile is the PEM bundle client certificates are verified against.
	// Required with ClientAuth; without it, a client certificate offered
	// is ignored.
	CAFile string
	// ClientAuth requires and verifies a client certificate (mutual TLS).
	ClientAuth bool
	// CheckInterval bounds how often the files are checked for a change;
	// 0 means DefaultCheckInterval, negative checks on every handshake.
	CheckInterval time.Duration
	// Logger receives reload events, under the name "tls". Nil discards.
	Logger hclog.Logger
}

// ClientConfig describes a client's TLS.
type ClientConfig struct {
	// CAFile is the PEM bundle the server's certificate is verified
	// against; empty means the system roots.
	CAFile string
	// CertFile and KeyFile, both or neither, are the certificate a client
	// presents to a server that asks for one (mutual TLS).
	CertFile, KeyFile string
	// ServerName is the name verified in the server's certificate; empty
	// means the host of the address dialled.
	ServerName string
	// InsecureSkipVerify accepts any server certificate. Only for tests
	// and throwaway setups: the connection is encrypted but not
	// authenticated.
	InsecureSkipVerify bool
	// CheckInterval and Logger are as in ServerConfig, for the client
	// certificate.
	CheckInterval time.Duration
	Logger        hclog.Logger
}

// Server builds the server *tls.Config described by c. The files are read
// now, so a missing or invalid one is reported here, and again whenever
// they change.
func (c ServerConfig) Server() (*tls.Config, error) {
	if c.CertFile == "" || c.KeyFile == "" {
		return nil, fmt.Errorf("%w: a TLS server needs both a certificate and a key file", ErrConfig)
	}
	if c.ClientAuth && c.CAFile == "" {
		return nil, fmt.Errorf("%w: client certificate verification needs a CA file", ErrConfig)
	}
	log := named(c.Logger)
	kp, err := newKeyPair(c.CertFile, c.KeyFile, c.CheckInterval, log)
	if err != nil {
		return nil, err
	}
	var ca *caPool
	if c.CAFile != "" {
		if ca, err = newCAPool(c.CAFile, c.CheckInterval, log); err != nil {
			return nil, err
		}
	}
	clientAuth := tls.NoClientCert
	if c.ClientAuth {
		clientAuth = tls.RequireAndVerifyClientCert
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: clientAuth}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			ClientAuth:   clientAuth,
			Certificates: []tls.Certificate{*kp.current()},
		}
		if ca != nil {
			cfg.ClientCAs = ca.current()
		}
		return cfg, nil
	}
	return base, nil
}

// Client builds the client *tls.Config described by c.
func (c ClientConfig) Client() (*tls.Config, error) {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, fmt.Errorf("%w: a client certificate needs both a certificate and a key file", ErrConfig)
	}
	log := named(c.Logger)
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.CAFile != "" {
		pool, err := loadCAPool(c.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if c.CertFile != "" {
		kp, err := newKeyPair(c.CertFile, c.KeyFile, c.CheckInterval, log)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return kp.current(), nil
		}
	}
	return cfg, nil
}

// Peer builds the pair raft peers use for mutual TLS from one certificate
// and CA: the listener's configuration, requiring a client certificate
// that chains to the CA, and the dialer's, presenting the certificate and
// verifying the peer against the same CA.
func Peer(certFile, keyFile, caFile string, logger hclog.Logger) (server, client *tls.Config, err error) {
	if caFile == "" {
		return nil, nil, fmt.Errorf("%w: peer TLS needs a CA file to verify the other peers", ErrConfig)
	}
	server, err = ServerConfig{CertFile: certFile, KeyFile: keyFile, CAFile: caFile, ClientAuth: true, Logger: logger}.Server()
	if err != nil {
		return nil, nil, err
	}
	client, err = ClientConfig{CAFile: caFile, CertFile: certFile, KeyFile: keyFile, Logger: logger}.Client()
	if err != nil {
		return nil, nil, err
	}
	return server, client, nil
}

func named(l hclog.Logger) hclog.Logger {
	if l == nil {
		return hclog.NewNullLogger()
	}
	return l.Named("tls")
}

// loadKeyPair reads and checks a certificate and its key.
func loadKeyPair(certFile, keyFile string, now time.Time) (*tls.Certificate, error) {
	certPEM, err := readFile(certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readFile(keyFile)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s with key %s: %w", ErrInvalid, certFile, keyFile, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s: %w", ErrInvalid, certFile, err)
	}
	if now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("%w: certificate %s (%s) expired at %s", ErrExpired, certFile, leaf.Subject, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if now.Before(leaf.NotBefore) {
		return nil, fmt.Errorf("%w: certificate %s (%s) is not valid before %s", ErrExpired, certFile, leaf.Subject, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	cert.Leaf = leaf
	return &cert, nil
}

// loadCAPool reads a PEM bundle of one or more CA certificates.
func loadCAPool(file string) (*x509.CertPool, error) {
	data, err := readFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: CA file %s: %w", ErrInvalid, file, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: CA file %s holds no PEM certificate", ErrInvalid, file)
	}
	return pool, nil
}

func readFile(name string) ([]byte, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoFile, err)
	}
	return data, nil
}
