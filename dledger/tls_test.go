package dledger_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/dledger/dledgertest"
	"github.com/raftmq/raftmq/internal/tlsconf"
)

// peerTLS makes one CA and a peer certificate for 127.0.0.1 and returns
// the listener and dialer configurations every node shares.
func peerTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	g, err := tlsconf.Generate(t.TempDir(), []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	server, client, err = tlsconf.Peer(g.ServerCert, g.ServerKey, g.CA, nil)
	if err != nil {
		t.Fatal(err)
	}
	return server, client
}

func TestElectionAndReplicationOverTLS(t *testing.T) {
	server, client := peerTLS(t)
	c := dledgertest.New(t, dledgertest.Options{TCP: true, Configure: func(i int, cfg *dledger.Config) {
		fastConfig(i, cfg)
		cfg.TLSServer, cfg.TLSClient = server, client
	}})
	c.WaitLeader(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &proposer{t: t, c: c}
	p.sendMany(ctx, 500, 8, []string{"a", "b"}, 2)
	acks := p.acks()
	if len(acks) != 500 {
		t.Fatalf("%d of 500 acknowledged", len(acks))
	}
	c.WaitConverged(10 * time.Second)
	checkQueuesIdentical(t, c)
	checkAcked(t, c, acks)
}

// A node whose certificate another CA signed is refused by its peers
// (mutual TLS): the two others elect a leader and replicate without it.
func TestRaftTLSRefusesPeerOfAnotherCA(t *testing.T) {
	server, client := peerTLS(t)
	strangerServer, strangerClient := peerTLS(t)
	c := dledgertest.New(t, dledgertest.Options{TCP: true, Configure: func(i int, cfg *dledger.Config) {
		fastConfig(i, cfg)
		cfg.TLSServer, cfg.TLSClient = server, client
		if i == 2 {
			cfg.TLSServer, cfg.TLSClient = strangerServer, strangerClient
		}
	}})
	l := c.WaitLeader(10 * time.Second)
	if l == 2 {
		t.Fatal("the stranger became leader")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &proposer{t: t, c: c}
	p.sendMany(ctx, 50, 4, []string{"a"}, 1)
	if n := len(p.acks()); n != 50 {
		t.Fatalf("%d of 50 acknowledged by the two trusted nodes", n)
	}
	if got := c.Node(2).Raft().AppliedIndex(); got != 0 {
		t.Fatalf("the stranger applied up to %d, want nothing", got)
	}
}
