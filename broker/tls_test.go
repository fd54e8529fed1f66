package broker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/tlsconf"
	"github.com/raftmq/raftmq/namesrv"
	"github.com/raftmq/raftmq/remoting"
)

// TestTLSEverywhere runs a name server and a group with mutual TLS on
// every port: the group elects over raft TLS, registers with the name
// server over TLS, a follower forwards a send to the leader over TLS, and
// /healthz answers over HTTPS.
func TestTLSEverywhere(t *testing.T) {
	g, err := tlsconf.Generate(t.TempDir(), []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	server := func() *tls.Config {
		c, err := tlsconf.ServerConfig{CertFile: g.ServerCert, KeyFile: g.ServerKey, CAFile: g.CA, ClientAuth: true}.Server()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	peerServer, peerClient, err := tlsconf.Peer(g.ServerCert, g.ServerKey, g.CA, nil)
	if err != nil {
		t.Fatal(err)
	}
	client, err := tlsconf.ClientConfig{CAFile: g.CA, CertFile: g.ClientCert, KeyFile: g.ClientKey}.Client()
	if err != nil {
		t.Fatal(err)
	}
	grp := brokertest.Start(t, brokertest.Options{
		Configure: func(_ int, c *broker.Config) {
			c.Remoting.TLS, c.HTTPTLS, c.ClientTLS = server(), server(), peerClient
			c.HTTPAddr = "127.0.0.1:0"
			rc := dledger.DefaultConfig()
			rc.TLSServer, rc.TLSClient = peerServer, peerClient
			c.Raft = &rc
		},
		ConfigureNamesrv: func(c *namesrv.Config) { c.Remoting.TLS = server() },
		ConfigureClient:  func(c *remoting.ClientConfig) { c.TLS = client },
	})
	leader := grp.WaitLeader(10 * time.Second)
	follower := (leader + 1) % grp.Len()
	if off := send(t, grp, follower, "TlsTopic", 0, "t", "over tls"); off != 0 {
		t.Fatalf("first send through a follower got offset %d", off)
	}
	grp.Eventually(10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := grp.Client.Invoke(ctx, grp.NSAddr, remoting.NewRequest(remoting.ReqGetBrokerClusterInfo, nil, nil))
		if err != nil {
			return err
		}
		for i := range grp.Len() {
			if !strings.Contains(string(resp.Body), grp.Addr(i)) {
				return fmt.Errorf("node %d not registered: %s", i, resp.Body)
			}
		}
		return nil
	})

	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(g.CA)
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(g.ClientCert, g.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	defer hc.CloseIdleConnections()
	var addr string
	grp.Eventually(5*time.Second, func() error {
		a := grp.Broker(leader).HTTPAddr()
		if a == nil {
			return fmt.Errorf("HTTP not listening yet")
		}
		addr = a.String()
		return nil
	})
	resp, err := hc.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over HTTPS: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Leader") {
		t.Fatalf("/healthz over HTTPS = %d %q", resp.StatusCode, body)
	}

	// A plaintext client is refused on the TLS client port.
	plain, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := plain.Invoke(ctx, grp.Addr(leader), sendReq("TlsTopic", 0, "t", "plain")); err == nil {
		t.Fatal("a plaintext client was served on a TLS port")
	}
}
