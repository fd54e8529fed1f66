package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/internal/tlsconf"
	"github.com/raftmq/raftmq/remoting"
)

// startTLSCluster runs the name server and the 3-node group as processes
// with TLS on every port (server authentication on the client ports, so
// the official client, which presents no certificate, gets in; mutual TLS
// between the raft peers) and returns the cluster and the CA's config.
func startTLSCluster(t *testing.T) (*cluster, tlsconf.Generated) {
	t.Helper()
	g, err := tlsconf.Generate(t.TempDir(), []string{"127.0.0.1", "localhost"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := tlsconf.ClientConfig{CAFile: g.CA}.Client()
	if err != nil {
		t.Fatal(err)
	}
	c := startClusterWith(t, clusterOpts{
		namesrvArgs: []string{"--tls-cert", g.ServerCert, "--tls-key", g.ServerKey},
		brokerArgs:  []string{"--tls-cert", g.ServerCert, "--tls-key", g.ServerKey, "--tls-ca", g.CA},
		admin:       func(cc *remoting.ClientConfig) { cc.TLS = admin },
	})
	return c, g
}

// officialTLSReset undoes producer/consumer.WithTls(true) at the end of
// the test: the official client keeps UseTls in its package-level default
// remoting config, which the option changes for every client created
// after it in this process.
func officialTLSReset(t *testing.T) {
	t.Cleanup(func() {
		// Applying the option is the reset; the producer is never started.
		if _, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver([]string{"127.0.0.1:1"})),
			producer.WithTls(false)); err != nil {
			t.Errorf("reset official client TLS: %v", err)
		}
	})
}

// TestOfficialClientOverTLS: the official Go client with WithTls(true)
// reaches the TLS name server and the TLS group, sends, and its push
// consumer gets every message; our SDK, verifying the servers against the
// CA, sends through the same cluster and its pull consumer reads both
// producers' messages. A plaintext official client gets nothing.
func TestOfficialClientOverTLS(t *testing.T) {
	c, g := startTLSCluster(t)
	officialTLSReset(t)
	createTopicOn(t, c, "TlsTopic", 4)

	p := newOfficialProducer(t, c.nsAddr, "tls-producer", producer.WithTls(true))
	const n = 200
	acked := sendConcurrently(t, p, "TlsTopic", n, 8)
	if len(acked) != n {
		t.Fatalf("official client over TLS: %d of %d sends acknowledged", len(acked), n)
	}

	tc, err := tlsconf.ClientConfig{CAFile: g.CA}.Client()
	if err != nil {
		t.Fatal(err)
	}
	sp, err := client.NewProducer("tls-sdk-producer", client.WithNameServers(c.nsAddr), client.WithTLS(tc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := sp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer sp.Close(context.Background())
	for i := n; i < 2*n; i++ {
		if _, err := sp.Send(ctx, sdkMessage("TlsTopic", i)); err != nil {
			t.Fatalf("SDK send %d over TLS: %v", i, err)
		}
		acked[i] = true
	}

	got := consumeAll(t, c.nsAddr, "TlsTopic", "tls-group", acked, 60*time.Second, consumer.WithTls(true))
	for i := range 2 * n {
		m := got[i]
		if m == nil {
			t.Fatalf("message %d not consumed over TLS (%d of %d)", i, len(got), 2*n)
		}
		if string(m.Body) != fmt.Sprintf("body-%d", i) {
			t.Fatalf("message %d altered: %q", i, m.Body)
		}
	}

	pc, err := client.NewPullConsumer("tls-sdk-pull", client.WithNameServers(c.nsAddr), client.WithTLS(tc),
		client.WithConsumeFrom(client.ConsumeFromFirst()))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe("TlsTopic", "*"); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pc.Close(context.Background())
	seen := map[string]bool{}
	for len(seen) < 2*n {
		msgs, err := pc.Poll(ctx)
		if err != nil {
			t.Fatalf("SDK poll over TLS after %d: %v", len(seen), err)
		}
		for _, m := range msgs {
			seen[string(m.Body)] = true
		}
	}

	// Our SDK without TLS is told the port may expect TLS.
	plain, err := client.NewProducer("tls-plain", client.WithNameServers(c.nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(context.Background())
	pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer pcancel()
	err = plain.Start(pctx)
	if err == nil {
		_, err = plain.Send(pctx, sdkMessage("TlsTopic", -1))
	}
	if err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("plaintext SDK producer on TLS ports: %v", err)
	}
	// The client's error can come back before the server's log line.
	waitFor(t, 5*time.Second, func() bool { return strings.Contains(c.ns.output(), "TLS handshake failed") })
}

// TestDevTLS runs `raftmq dev --tls`: its banner says how to connect, the
// CLI does so with the generated CA (send, consume, cluster status), and
// a plaintext CLI is refused with a TLS hint.
func TestDevTLS(t *testing.T) {
	ns := strconv.Itoa(freePort(t))
	bp, rp := strconv.Itoa(20000+freePort(t)%20000), strconv.Itoa(40000+freePort(t)%20000)
	data := filepath.Join(t.TempDir(), "data")
	dp := strconv.Itoa(freePort(t))
	p := startProc(t, "dev", "--tls", "--data", data, "--namesrv-port", ns, "--broker-port", bp, "--raft-port", rp, "--http-port", "0",
		"--dashboard-port", dp)
	waitFor(t, 30*time.Second, func() bool { return strings.Contains(p.output(), "Stop with Ctrl-C") })
	ca := filepath.Join(data, "tls", "ca.pem")
	for _, want := range []string{"TLS is on", "--tls-ca " + ca, "WithTls(true)", "Dashboard:        https://127.0.0.1:" + dp + "/"} {
		if !strings.Contains(p.output(), want) {
			t.Fatalf("dev --tls banner lacks %q:\n%s", want, p.output())
		}
	}
	nsAddr := "127.0.0.1:" + ns
	run := func(args ...string) (string, error) {
		b, err := exec.Command(raftmqBin, append(args, "--namesrv", nsAddr)...).CombinedOutput()
		return string(b), err
	}
	if out, err := run("send", "--tls-ca", ca, "--topic", "DevTls", "--body", "hello"); err != nil || !strings.Contains(out, "SEND_OK") {
		t.Fatalf("send over TLS: %v\n%s", err, out)
	}
	if out, err := run("consume", "--tls-ca", ca, "--topic", "DevTls", "--group", "dev-tls", "--from", "first", "--count", "1"); err != nil || !strings.Contains(out, `body="hello"`) {
		t.Fatalf("consume over TLS: %v\n%s", err, out)
	}
	cmd := exec.Command(raftmqBin, "cluster", "status", "--namesrv", nsAddr)
	cmd.Env = append(os.Environ(), "RAFTMQ_TLS_CA="+ca)
	if out, err := cmd.CombinedOutput(); err != nil || strings.Count(string(out), "broker-a") != 3 {
		t.Fatalf("cluster status with RAFTMQ_TLS_CA: %v\n%s", err, out)
	}
	if out, err := run("cluster", "status"); err == nil || !strings.Contains(out, "dial with TLS") {
		t.Fatalf("plaintext cluster status on dev --tls: %v\n%s", err, out)
	}
	// The dashboard is served over HTTPS and reads the cluster over TLS.
	page := httpsGet(t, ca, "https://127.0.0.1:"+dp+"/")
	if strings.Count(page, `<tr class="node`) != 3 || strings.Count(page, `<tr class="node leader">`) != 1 {
		t.Fatalf("dev --tls dashboard:\n%s", page)
	}
}
