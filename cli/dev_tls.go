package cli

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/tlsconf"
)

// devTLSValidity is how long the certificates of `raftmq dev --tls` last.
const devTLSValidity = 30 * 24 * time.Hour

// devTLS is the TLS of `raftmq dev --tls`: a throwaway CA and certificates
// in <data>/tls, TLS on the name server, the client ports and HTTP
// (server authentication, so any client that verifies with ca.pem, or
// skips verification, connects), mutual TLS between the raft peers.
type devTLS struct {
	files      tlsconf.Generated
	server     *tls.Config
	peerServer *tls.Config
	peer       *tls.Config
}

// newDevTLS reuses the certificates of an earlier run when they still
// load (a client keeps its ca.pem), else writes new ones.
func newDevTLS(data, host string, log hclog.Logger) (*devTLS, error) {
	dir := filepath.Join(data, "tls")
	files := tlsconf.Generated{CA: filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem")}
	d, err := loadDevTLS(files, log)
	if err == nil {
		return d, nil
	}
	hosts := []string{"localhost", "127.0.0.1"}
	if host != "127.0.0.1" && host != "localhost" {
		hosts = append(hosts, host)
	}
	if files, err = tlsconf.Generate(dir, hosts, devTLSValidity); err != nil {
		return nil, err
	}
	return loadDevTLS(files, log)
}

func loadDevTLS(files tlsconf.Generated, log hclog.Logger) (*devTLS, error) {
	if _, err := os.Stat(files.CA); err != nil {
		return nil, err
	}
	srv, err := tlsconf.ServerConfig{CertFile: files.ServerCert, KeyFile: files.ServerKey, Logger: log}.Server()
	if err != nil {
		return nil, err
	}
	ps, pc, err := tlsconf.Peer(files.ServerCert, files.ServerKey, files.CA, log)
	if err != nil {
		return nil, err
	}
	return &devTLS{files: files, server: srv, peerServer: ps, peer: pc}, nil
}

func (d *devTLS) configure(cfg *broker.Config) {
	cfg.Remoting.TLS, cfg.HTTPTLS, cfg.ClientTLS = d.server, d.server, d.peer
	rc := dledger.DefaultConfig()
	rc.TLSServer, rc.TLSClient = d.peerServer, d.peer
	cfg.Raft = &rc
}

func (d *devTLS) printBanner(w io.Writer, nsAddr, httpAddr string) {
	ca := d.files.CA
	fmt.Fprintf(w, "TLS is on for every port (raft between the nodes uses mutual TLS).\n")
	fmt.Fprintf(w, "Throwaway CA and certificates in %s; clients verify with %s:\n", filepath.Dir(ca), ca)
	fmt.Fprintf(w, "  export NAMESRV_ADDR=%s RAFTMQ_TLS_CA=%s\n", nsAddr, ca)
	fmt.Fprintf(w, "  raftmq send    --tls-ca %s --namesrv %s --topic TopicTest --body hello\n", ca, nsAddr)
	fmt.Fprintf(w, "  raftmq consume --tls-ca %s --namesrv %s --topic TopicTest --group demo --from first --count 1\n", ca, nsAddr)
	fmt.Fprintf(w, "  Go SDK: client.WithTLS(cfg) with cfg.RootCAs from %s\n", ca)
	fmt.Fprintf(w, "  Apache RocketMQ Go client: producer.WithTls(true) / consumer.WithTls(true) (it skips verification)\n")
	if httpAddr != "" {
		fmt.Fprintf(w, "  curl --cacert %s https://%s/healthz\n", ca, httpAddr)
	}
	fmt.Fprintln(w)
}
