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
	"github.com/raftmq/raftmq/remoting"
)

// TestTLSEverywhere runs a name server and a group with mutual TLS on
// every port: the group elects over raft TLS, registers with the name
// server over TLS, a follower forwards a send to the leader over TLS, and
// /healthz answers over HTTPS.
func TestTLSEverywhere(t *testing.T) {
	grp := brokertest.Start(t, brokertest.Options{TLS: true, Configure: func(_ int, c *broker.Config) {
		c.HTTPAddr = "127.0.0.1:0"
	}})
	g := grp.TLS
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
