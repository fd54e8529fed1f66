package broker_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestHTTPHealthAndMetrics(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.HTTPAddr = "127.0.0.1:0" }})
	leader := g.WaitLeader(5 * time.Second)
	var base string
	g.Eventually(5*time.Second, func() error {
		a := g.Broker(leader).HTTPAddr()
		if a == nil {
			return fmt.Errorf("HTTP not listening yet")
		}
		base = "http://" + a.String()
		return nil
	})
	code, body := httpGet(t, base+"/healthz")
	if code != http.StatusOK || !strings.Contains(body, "Leader") {
		t.Fatalf("/healthz on the leader = %d %q", code, body)
	}
	code, body = httpGet(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{"raftmq_raft_is_leader{", "} 1\n", "raftmq_raft_term{", "raftmq_raft_applied_index{", `broker="broker-a"`,
		"# TYPE raftmq_remoting_refused_connections_total counter\n", "raftmq_remoting_rate_limited_requests_total{"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	if code, _ := httpGet(t, base+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/ = %d", code)
	}
	// A follower reports itself healthy (its group has a leader) but not leader.
	f := (leader + 1) % g.Len()
	g.Eventually(5*time.Second, func() error {
		a := g.Broker(f).HTTPAddr()
		if a == nil {
			return fmt.Errorf("follower HTTP not listening yet")
		}
		code, body := httpGet(t, "http://"+a.String()+"/healthz")
		if code != http.StatusOK || !strings.Contains(body, "Follower") {
			return fmt.Errorf("/healthz on a follower = %d %q", code, body)
		}
		_, m := httpGet(t, "http://"+a.String()+"/metrics")
		if !strings.Contains(m, "raftmq_raft_is_leader{") || strings.Contains(m, "raftmq_raft_is_leader{cluster=\"test-cluster\",broker=\"broker-a\",node=\""+fmt.Sprintf("n%d", f+1)+"\"} 1") {
			return fmt.Errorf("follower metrics: %s", m)
		}
		return nil
	})
}
