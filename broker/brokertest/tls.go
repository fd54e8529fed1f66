package brokertest

import (
	"crypto/tls"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/tlsconf"
)

// tlsConfigs are the configurations of a group under Options.TLS.
type tlsConfigs struct {
	server           *tls.Config // mutual TLS: name server, client ports, HTTP
	peerServer, peer *tls.Config // raft, and the nodes' own clients
	client           *tls.Config // Group.Client: the client certificate
}

func (g *Group) setupTLS() {
	files, err := tlsconf.Generate(g.t.TempDir(), []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		g.t.Fatal(err)
	}
	srv, err := tlsconf.ServerConfig{CertFile: files.ServerCert, KeyFile: files.ServerKey, CAFile: files.CA, ClientAuth: true}.Server()
	if err != nil {
		g.t.Fatal(err)
	}
	peerServer, peer, err := tlsconf.Peer(files.ServerCert, files.ServerKey, files.CA, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	cl, err := tlsconf.ClientConfig{CAFile: files.CA, CertFile: files.ClientCert, KeyFile: files.ClientKey}.Client()
	if err != nil {
		g.t.Fatal(err)
	}
	g.TLS = files
	g.tls = &tlsConfigs{server: srv, peerServer: peerServer, peer: peer, client: cl}
}

// ClientTLS is the TLS configuration of a client of the group (with the
// client certificate), nil without Options.TLS.
func (g *Group) ClientTLS() *tls.Config {
	if g.tls == nil {
		return nil
	}
	return g.tls.client
}

func (tc *tlsConfigs) configure(c *broker.Config) {
	c.Remoting.TLS, c.HTTPTLS, c.ClientTLS = tc.server, tc.server, tc.peer
	rc := dledger.DefaultConfig()
	if c.Raft != nil {
		rc = *c.Raft
	}
	rc.TLSServer, rc.TLSClient = tc.peerServer, tc.peer
	c.Raft = &rc
}
