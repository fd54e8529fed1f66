package broker_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// metricValue finds the series whose line starts with name and holds
// every label in labels, and returns its value.
func metricValue(body, name string, labels ...string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 || !strings.HasPrefix(line, name+"{") {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(line[:sp], l)
		}
		if all {
			v, err := strconv.ParseFloat(line[sp+1:], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestMetricsUnderRocketMQNames (issue 15): /metrics carries RocketMQ 5's
// series with live values during a send and a consume, and raft's own.
func TestMetricsUnderRocketMQNames(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{Configure: func(_ int, c *broker.Config) { c.HTTPAddr = "127.0.0.1:0" }})
	leader := g.WaitLeader(5 * time.Second)
	createTopic(t, g, "mt", 2)
	for i := 0; i < 10; i++ {
		send(t, g, leader, "mt", 0, "", fmt.Sprintf("m%d", i))
	}
	sendParked(t, g, leader, "mt", 1, map[string]string{message.PropertyDelayLevel: "18"}, "later")
	expectPull(t, g.Invoke(leader, pullReq(pullArgs{group: "mg", topic: "mt", max: 4})), remoting.ResSuccess, 4)
	if resp := g.Invoke(leader, updateOffsetReq("mg", "mt", 0, 2)); resp.Code != remoting.ResSuccess {
		t.Fatalf("commit offset: %d %s", resp.Code, resp.Remark)
	}
	node := fmt.Sprintf(`node_id=%q`, g.Config(leader).NodeID)
	topic, group := `topic="mt"`, `consumer_group="mg"`
	want := []struct {
		name   string
		labels []string
		check  func(float64) bool
		what   string
	}{
		{"rocketmq_messages_in_total", []string{node, topic, `message_type="normal"`}, eq(10), "10"},
		{"rocketmq_messages_in_total", []string{node, topic, `message_type="delay"`}, eq(1), "1"},
		{"rocketmq_throughput_in_total", []string{node, topic, `message_type="normal"`}, gt(10 * 20), "> 200 bytes"},
		{"rocketmq_message_size_count", []string{node, topic, `message_type="normal"`}, eq(10), "10"},
		{"rocketmq_messages_out_total", []string{node, topic, group}, eq(4), "4"},
		{"rocketmq_throughput_out_total", []string{node, topic, group}, gt(0), "> 0"},
		{"rocketmq_consumer_lag_messages", []string{node, topic, group}, eq(8), "8"},
		{"rocketmq_consumer_inflight_messages", []string{node, topic, group}, eq(2), "2"},
		{"rocketmq_consumer_lag_latency", []string{node, topic, group}, ge(0), ">= 0"},
		{"rocketmq_timing_messages", []string{node}, eq(1), "1"},
		{"rocketmq_storage_size", []string{node, `cluster="test-cluster"`}, gt(0), "> 0"},
		{"rocketmq_storage_dispatch_behind_bytes", []string{node}, ge(0), ">= 0"},
		{"rocketmq_rpc_latency_count", []string{node, `protocol_type="remoting"`, `request_code="10"`, `response_code="0"`}, ge(10), ">= 10"},
		{"raftmq_commitlog_fsync_latency_count", []string{node}, gt(0), "> 0"},
		{"raftmq_commitlog_entries_per_fsync_bucket", []string{node, `le="+Inf"`}, gt(0), "> 0"},
		{"raftmq_raft_apply_lag_entries", []string{node}, ge(0), ">= 0"},
	}
	base := httpBase(t, g, leader)
	g.Eventually(5*time.Second, func() error {
		_, body := httpGet(t, base+"/metrics")
		for _, w := range want {
			v, ok := metricValue(body, w.name, w.labels...)
			if !ok || !w.check(v) {
				return fmt.Errorf("%s%v = %v (found %v), want %s", w.name, w.labels, v, ok, w.what)
			}
		}
		if !strings.Contains(body, "\nraft_") {
			return fmt.Errorf("no hashicorp/raft series")
		}
		return nil
	})
	// Consumer series come from the leader only.
	_, body := httpGet(t, httpBase(t, g, follower(g, leader))+"/metrics")
	if _, ok := metricValue(body, "rocketmq_consumer_lag_messages"); ok {
		t.Errorf("a follower reports consumer lag:\n%s", body)
	}
	if _, ok := metricValue(body, "rocketmq_storage_size"); !ok {
		t.Errorf("a follower does not report its storage:\n%s", body)
	}
}

func eq(x float64) func(float64) bool { return func(v float64) bool { return v == x } }
func gt(x float64) func(float64) bool { return func(v float64) bool { return v > x } }
func ge(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }

// httpBase is node i's HTTP base URL once it listens.
func httpBase(t *testing.T, g *brokertest.Group, i int) string {
	t.Helper()
	var base string
	g.Eventually(5*time.Second, func() error {
		a := g.Broker(i).HTTPAddr()
		if a == nil {
			return fmt.Errorf("node %d HTTP not listening yet", i)
		}
		base = "http://" + a.String()
		return nil
	})
	return base
}

// TestGrafanaDashboardNamesExportedSeries: every series the ready
// dashboard (deploy/grafana-dashboard.json) queries is one /metrics has.
func TestGrafanaDashboardNamesExportedSeries(t *testing.T) {
	b, err := os.ReadFile("../deploy/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	exported := map[string]bool{}
	for _, n := range broker.MetricNames() {
		exported[n] = true
	}
	re := regexp.MustCompile(`\b(rocketmq|raftmq)_[a-z_]+`)
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range re.FindAllString(tg.Expr, -1) {
				n++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
				if !exported[base] {
					t.Errorf("panel %q queries %s, which /metrics does not export", p.Title, m)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d series queried: is the dashboard empty?", n)
	}
}
