package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/dashboard"
	"github.com/raftmq/raftmq/message"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testDiskUsage is the simulated disk use of every node's commitlog.
const testDiskUsage = 0.25

// env is a running broker group (a name server and 3 nodes on loopback
// TCP) and a dashboard on a real loopback listener.
type env struct {
	t        *testing.T
	g        *brokertest.Group
	admin    *client.Admin
	producer *client.Producer
	base     string // http://127.0.0.1:port
	http     *http.Client
}

func start(t *testing.T) *env {
	t.Helper()
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.Store.CommitLog.Retention.DiskUsage = func(string) (float64, error) { return testDiskUsage, nil }
	}})
	e := &env{t: t, g: g, http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}}
	var err error
	if e.admin, err = client.NewAdmin(client.WithNameServers(g.NSAddr)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.admin.Close() })
	if e.producer, err = client.NewProducer("dashboard-test", client.WithNameServers(g.NSAddr)); err != nil {
		t.Fatal(err)
	}
	if err := e.producer.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.producer.Close(ctx)
	})
	srv, err := dashboard.New(dashboard.Config{Admin: e.admin, Producer: e.producer})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	e.base = hs.URL
	e.waitRegistered()
	return e
}

// waitRegistered waits until the name server lists the group with a
// leader, so pages see the whole cluster.
func (e *env) waitRegistered() {
	e.g.Eventually(10*time.Second, func() error {
		ci, err := e.admin.ClusterInfo(context.Background())
		if err != nil {
			return err
		}
		bd, ok := ci.BrokerAddrTable["broker-a"]
		if !ok || len(bd.BrokerAddrs) != 3 || bd.BrokerAddrs[0] == "" {
			return fmt.Errorf("cluster info %+v", ci.BrokerAddrTable)
		}
		return nil
	})
}

// do sends a request and returns the status and body.
func (e *env) do(req *http.Request) (int, string) {
	e.t.Helper()
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (e *env) get(path string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.base+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.do(req)
}

func (e *env) post(path string, form url.Values) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return e.do(req)
}

// mustGet GETs path and fails unless it answered 200 without an error box.
func (e *env) mustGet(path string) string {
	e.t.Helper()
	code, body := e.get(path)
	if code != http.StatusOK || strings.Contains(body, `class="error"`) {
		e.t.Fatalf("GET %s: %d\n%s", path, code, body)
	}
	return body
}

func (e *env) createTopic(topic string, queues int) {
	e.t.Helper()
	e.g.Eventually(10*time.Second, func() error {
		_, err := e.admin.CreateTopic(context.Background(), client.TopicConfig{Topic: topic, Queues: queues})
		return err
	})
	e.g.Eventually(10*time.Second, func() error {
		_, err := e.admin.Route(context.Background(), topic)
		return err
	})
}

// sendN sends n messages with key and returns their results.
func (e *env) sendN(topic, key string, n int) []client.SendResult {
	e.t.Helper()
	var out []client.SendResult
	for i := range n {
		m := &message.Message{Topic: topic, Body: []byte(fmt.Sprintf("%s-body-%d", key, i))}
		m.SetKeys([]string{key})
		res, err := e.producer.Send(context.Background(), m)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, res)
	}
	e.g.WaitApplied(10 * time.Second) // the pages read what every node applied
	return out
}

// percent is how the cluster page shows a usage ratio.
func percent(ratio float64) string { return fmt.Sprintf("%.1f %%", math.Round(1000*ratio)/10) }

// newServer serves h on a loopback listener until the test ends and
// returns its base URL.
func newServer(t *testing.T, h http.Handler) string {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}
