package client

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
)

// TestTLSProduceAndPull: with WithTLS a producer and a pull consumer reach
// the name server and the brokers of a group that serves mutual TLS on
// every port; a producer without it is refused with a TLS hint.
func TestTLSProduceAndPull(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{TLS: true})
	createTopic(t, g, "tls", 1)
	p := startProducer(t, g, WithTLS(g.ClientTLS()))
	sendN(t, p, "tls", "a", 10, nil)
	q := MessageQueue{"tls", "broker-a", 0}
	pc := startPull(t, g, "cg-tls", "p1", func(pc *PullConsumer) error { return pc.Assign(q) },
		WithConsumeFrom(ConsumeFromFirst()), WithTLS(g.ClientTLS()))
	if msgs := pollUntil(t, pc, 10); len(msgs) < 10 {
		t.Fatalf("polled %d", len(msgs))
	}

	plain, err := NewProducer("pg-plain", WithNameServers(g.NSAddr), WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = plain.Start(ctx)
	if err == nil {
		_, err = plain.Send(ctx, newMsg("tls", "x"))
	}
	if err == nil || !strings.Contains(err.Error(), "dial with TLS") {
		t.Fatalf("plaintext producer on TLS ports: %v", err)
	}

	// InsecureSkipVerify without a client certificate fails mutual TLS.
	anyCert, err := NewProducer("pg-nocert", WithNameServers(g.NSAddr), WithTLS(&tls.Config{InsecureSkipVerify: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer anyCert.Close(context.Background())
	if err := anyCert.Start(ctx); err == nil {
		if _, err := anyCert.Send(ctx, newMsg("tls", "y")); err == nil {
			t.Fatal("a client without a certificate sent through mutual TLS")
		}
	}
}
