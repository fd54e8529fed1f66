package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// nodeRows matches the cluster page's node rows (leader or not).
var nodeRows = regexp.MustCompile(`<tr class="node( leader)?">\s*<td>([^<]*)</td>`)

// leaderOf returns the node id of the one Leader row of the cluster
// page, failing unless there are exactly 3 nodes and one leader.
func leaderOf(t *testing.T, page string) string {
	t.Helper()
	rows := nodeRows.FindAllStringSubmatch(page, -1)
	var leaders []string
	for _, r := range rows {
		if r[1] != "" {
			leaders = append(leaders, r[2])
		}
	}
	if len(rows) != 3 || len(leaders) != 1 {
		t.Fatalf("cluster page: %d node rows, leaders %v\n%s", len(rows), leaders, page)
	}
	return leaders[0]
}

// TestClusterPage: the cluster page lists the group's 3 nodes, exactly
// one a Leader, with their disk use; the transfer form hands leadership
// to the named follower, and the page then shows that node leading.
func TestClusterPage(t *testing.T) {
	e := start(t)
	page := e.mustGet("/")
	old := leaderOf(t, page)
	if n := strings.Count(page, `<td class="disk">`+percent(testDiskUsage)); n != 3 {
		t.Fatalf("cluster page shows disk use %s on %d nodes, want 3\n%s", percent(testDiskUsage), n, page)
	}
	if !strings.Contains(page, `<td class="role">Leader</td>`) || strings.Count(page, `<td class="role">Follower</td>`) != 2 {
		t.Fatalf("cluster page roles:\n%s", page)
	}
	to := "n1"
	if old == "n1" {
		to = "n2"
	}
	code, body := e.post("/cluster/transfer", url.Values{"group": {"broker-a"}, "to": {to}})
	if code != http.StatusOK || !strings.Contains(body, "The leader is now "+to+" (") {
		t.Fatalf("transfer to %s: %d\n%s", to, code, body)
	}
	e.g.Eventually(10*time.Second, func() error {
		if got := leaderOf(t, e.mustGet("/")); got != to {
			return fmt.Errorf("leader %s, want %s", got, to)
		}
		return nil
	})
}

// TestTopicPagesAndSend: the topics page lists a topic with its queue
// count and hides system topics unless asked; the send form stores a
// message and links to it; the topic page counts it in its queue's max
// offset; a key query finds it, and a body that is not UTF-8 is shown
// in hex.
func TestTopicPagesAndSend(t *testing.T) {
	e := start(t)
	e.createTopic("dash-topic", 4)
	list := e.mustGet("/topics")
	if !strings.Contains(list, `<a href="/topics/dash-topic">dash-topic</a></td>
<td>1</td><td class="read-queues">4</td><td>4</td>`) {
		t.Fatalf("topics page lacks dash-topic with 4 queues:\n%s", list)
	}
	if strings.Contains(list, "TBW102") || !strings.Contains(e.mustGet("/topics?all=1"), "TBW102") {
		t.Fatal("system topic TBW102 is listed by default or missing with all=1")
	}

	code, res := e.post("/topics/dash-topic/send", url.Values{"body": {"hello <dashboard>"}, "keys": {"order-17 other"}, "tags": {"tagA"}})
	if code != http.StatusOK || !strings.Contains(res, "Sent to dash-topic: SEND_OK") {
		t.Fatalf("send: %d\n%s", code, res)
	}
	e.g.WaitApplied(10 * time.Second) // acknowledged once stored on a majority, shown once applied
	link := regexp.MustCompile(`<a id="follow" href="(/messages\?id=[0-9A-F]+)">`).FindStringSubmatch(res)
	if link == nil {
		t.Fatalf("send result has no link to the message:\n%s", res)
	}
	msg := e.mustGet(link[1])
	for _, want := range []string{`<pre id="body">hello &lt;dashboard&gt;</pre>`, `<span id="body-kind">text</span>`,
		`<tr><td>KEYS</td><td>order-17 other</td></tr>`, `<tr><th>tags</th><td>tagA</td></tr>`} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message page lacks %s:\n%s", want, msg)
		}
	}

	topic := e.mustGet("/topics/dash-topic")
	if !strings.Contains(topic, `<small id="queue-count">4 queues, 1 messages stored</small>`) ||
		strings.Count(topic, `<td class="max">1</td>`) != 1 || strings.Count(topic, `<td class="max">0</td>`) != 3 {
		t.Fatalf("topic page after one send:\n%s", topic)
	}

	found := e.mustGet("/messages?" + url.Values{"topic": {"dash-topic"}, "key": {"order-17"}}.Encode())
	if !strings.Contains(found, `<small id="result-count">1 messages</small>`) || !strings.Contains(found, `<td class="body">hello &lt;dashboard&gt;</td>`) {
		t.Fatalf("key query:\n%s", found)
	}
	if none := e.mustGet("/messages?" + url.Values{"topic": {"dash-topic"}, "key": {"no-such-key"}}.Encode()); !strings.Contains(none, `0 messages`) {
		t.Fatalf("query of an unknown key:\n%s", none)
	}

	_, res = e.post("/topics/dash-topic/send", url.Values{"body": {"\xff\xfe\x00binary"}})
	link = regexp.MustCompile(`<a id="follow" href="(/messages\?id=[0-9A-F]+)">`).FindStringSubmatch(res)
	if link == nil {
		t.Fatalf("binary send:\n%s", res)
	}
	if msg := e.mustGet(link[1]); !strings.Contains(msg, `<span id="body-kind">hex</span>`) || !strings.Contains(msg, "ff fe 00 62 69 6e") {
		t.Fatalf("binary body not shown in hex:\n%s", msg)
	}
}

// totalLag reads the group page's total lag.
func totalLag(t *testing.T, e *env, group string) string {
	t.Helper()
	m := regexp.MustCompile(`<strong id="total-lag">(\d+)</strong>`).FindStringSubmatch(e.mustGet("/groups/" + group))
	if m == nil {
		t.Fatalf("group page of %s has no total lag", group)
	}
	return m[1]
}

// TestGroupPageAndReset: a group with committed offsets is listed; its
// page shows the lag of the messages produced after them; the reset form
// moves it to latest (lag 0), earliest (lag N) and by time.
func TestGroupPageAndReset(t *testing.T) {
	e := start(t)
	const topic, group, n = "dash-lag", "dash-group", 6
	e.createTopic(topic, 2)
	ctx := context.Background()
	bounds, err := e.admin.TopicQueueBounds(ctx, topic)
	if err != nil || len(bounds) != 2 {
		t.Fatalf("bounds %v, %v", bounds, err)
	}
	for _, b := range bounds {
		if err := e.admin.UpdateConsumerOffset(ctx, group, b.Queue, 0); err != nil {
			t.Fatal(err)
		}
	}
	e.sendN(topic, "k", n)
	if list := e.mustGet("/groups"); !strings.Contains(list, `<a href="/groups/dash-group">dash-group</a>`) {
		t.Fatalf("groups page lacks dash-group:\n%s", list)
	}
	if got := totalLag(t, e, group); got != fmt.Sprint(n) {
		t.Fatalf("total lag %s after %d messages, want %d", got, n, n)
	}
	reset := func(to string, extra ...string) string {
		t.Helper()
		form := url.Values{"topic": {topic}, "to": {to}}
		if len(extra) > 0 {
			form.Set("time", extra[0])
		}
		code, body := e.post("/groups/"+group+"/reset", form)
		if code != http.StatusOK || !strings.Contains(body, "Offsets of dash-group in dash-lag reset ("+to+")") {
			t.Fatalf("reset to %s: %d\n%s", to, code, body)
		}
		return body
	}
	if body := reset("latest"); strings.Count(body, "<tr><td>dash-lag@broker-a#") != 2 {
		t.Fatalf("reset result should list the 2 queues:\n%s", body)
	}
	if got := totalLag(t, e, group); got != "0" {
		t.Fatalf("total lag %s after reset to latest", got)
	}
	reset("earliest")
	if got := totalLag(t, e, group); got != fmt.Sprint(n) {
		t.Fatalf("total lag %s after reset to earliest, want %d", got, n)
	}
	reset("time", time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04"))
	if got := totalLag(t, e, group); got != "0" {
		t.Fatalf("total lag %s after reset to an hour ahead", got)
	}
	reset("time", time.Now().UTC().Add(-time.Hour).Format("2006-01-02T15:04"))
	if got := totalLag(t, e, group); got != fmt.Sprint(n) {
		t.Fatalf("total lag %s after reset to an hour ago, want %d", got, n)
	}
	if code, body := e.post("/groups/"+group+"/reset", url.Values{"topic": {topic}, "to": {"sideways"}}); code != http.StatusBadRequest || !strings.Contains(body, `class="error"`) {
		t.Fatalf("reset to sideways: %d\n%s", code, body)
	}
}

// TestGroupPageConnectionsAndLiveReset: the group page lists a running
// push consumer's connection, and a reset to earliest from the page makes
// that consumer receive every message again without a restart.
func TestGroupPageConnectionsAndLiveReset(t *testing.T) {
	e := start(t)
	const topic, group, n = "dash-live", "dash-live-group", 5
	e.createTopic(topic, 2)
	e.sendN(topic, "k", n)
	var got atomic.Int64
	pc, err := client.NewPushConsumer(group, client.WithNameServers(e.g.NSAddr), client.WithConsumeFrom(client.ConsumeFromFirst()),
		client.WithCommitInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, "*", func(_ context.Context, msgs []*message.MessageExt) client.ConsumeResult {
		got.Add(int64(len(msgs)))
		return client.ConsumeSuccess
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := pc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
	e.g.Eventually(20*time.Second, func() error {
		if got.Load() < n || totalLag(t, e, group) != "0" {
			return fmt.Errorf("consumed %d, lag %s", got.Load(), totalLag(t, e, group))
		}
		return nil
	})
	page := e.mustGet("/groups/" + group)
	if !strings.Contains(page, `<td class="client-id">`+pc.ClientID()+`</td>`) || !strings.Contains(page, "CONSUME_PASSIVELY") ||
		strings.Contains(page, `id="no-connections"`) {
		t.Fatalf("group page does not list consumer %s:\n%s", pc.ClientID(), page)
	}
	code, body := e.post("/groups/"+group+"/reset", url.Values{"topic": {topic}, "to": {"earliest"}})
	if code != http.StatusOK || !strings.Contains(body, "restart at the new offsets") {
		t.Fatalf("reset: %d\n%s", code, body)
	}
	e.g.Eventually(20*time.Second, func() error {
		if got.Load() < 2*n {
			return fmt.Errorf("consumed %d after the reset, want %d", got.Load(), 2*n)
		}
		return nil
	})
}
