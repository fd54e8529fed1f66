package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

func startTestProducer(t *testing.T, g *brokertest.Group, group string) *client.Producer {
	t.Helper()
	p, err := client.NewProducer(group, client.WithNameServers(g.NSAddr), client.WithLogger(hclog.NewNullLogger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// sendMessages sends n messages to topic and waits until every node of g
// applied them, so what the test reads next shows them.
func sendMessages(t *testing.T, g *brokertest.Group, p *client.Producer, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range n {
		if _, err := p.Send(ctx, &message.Message{Topic: topic, Body: []byte(fmt.Sprint("m-", i))}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	g.WaitApplied(10 * time.Second)
}

// deliveries counts a push consumer's deliveries by queue offset and keeps
// each offset's store time.
type deliveries struct {
	mu    sync.Mutex
	count map[int64]int
	store map[int64]int64
	gate  chan struct{} // when set, the handler waits for it to close
}

func (d *deliveries) handler(ctx context.Context, msgs []*message.MessageExt) client.ConsumeResult {
	d.mu.Lock()
	for _, m := range msgs {
		d.count[m.QueueOffset]++
		d.store[m.QueueOffset] = m.StoreTimestamp
	}
	gate := d.gate
	d.mu.Unlock()
	if gate != nil {
		// ctx ends when Close gives up on the handlers: a test that failed
		// with the gate shut must still close its consumer.
		select {
		case <-gate:
		case <-ctx.Done():
			return client.ConsumeRetryLater
		}
	}
	return client.ConsumeSuccess
}

func (d *deliveries) setGate(gate chan struct{}) {
	d.mu.Lock()
	d.gate = gate
	d.mu.Unlock()
}

// atLeast reports an error unless every offset in [from, to) was delivered
// at least n times.
func (d *deliveries) atLeast(from, to int64, n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for off := from; off < to; off++ {
		if d.count[off] < n {
			return fmt.Errorf("offset %d delivered %d times, want >= %d", off, d.count[off], n)
		}
	}
	return nil
}

func (d *deliveries) snapshot() (map[int64]int, map[int64]int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, s := map[int64]int{}, map[int64]int64{}
	for k, v := range d.count {
		c[k] = v
	}
	for k, v := range d.store {
		s[k] = v
	}
	return c, s
}

func startTestConsumer(t *testing.T, g *brokertest.Group, group, topic string, h client.MessageHandler, opts ...client.PushConsumerOpt) *client.PushConsumer {
	t.Helper()
	opts = append([]client.PushConsumerOpt{client.WithNameServers(g.NSAddr), client.WithLogger(hclog.NewNullLogger()),
		client.WithConsumeFrom(client.ConsumeFromFirst())}, opts...)
	pc, err := client.NewPushConsumer(group, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, "*", h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := pc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = pc.Close(ctx)
	})
	return pc
}

// TestGroupSubscriptionCommands: group create/update/list/delete round-trip
// a subscription group's config through every broker, list --output json
// has the config's Java field names, and update changes only the flags
// given.
func TestGroupSubscriptionCommands(t *testing.T) {
	g, _ := startTopic(t, "cli-subgroup", 1)
	ns := g.NSAddr
	if _, _, err := run(t, "group", "update", "-n", ns, "-g", "cli-sg"); err == nil || !strings.Contains(err.Error(), `no subscription group "cli-sg"`) {
		t.Fatalf("update of a missing group: %v", err)
	}
	out, _, err := run(t, "group", "create", "-n", ns, "-g", "cli-sg", "--retry-max-times", "3", "--broadcast=false")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "created subscription group cli-sg in group broker-a") {
		t.Fatalf("create printed %q", out)
	}
	find := func() map[string]any {
		var rows []map[string]any
		runJSON(t, &rows, "group", "list", "-n", ns)
		for _, r := range rows {
			if r["groupName"] == "cli-sg" {
				return r
			}
		}
		return nil
	}
	r := find()
	if r == nil {
		t.Fatal("group list lacks cli-sg")
	}
	if r["retryMaxTimes"] != 3.0 || r["consumeBroadcastEnable"] != false || r["consumeEnable"] != true ||
		r["retryQueueNums"] != 1.0 || r["brokerName"] == "" || r["brokerName"] == nil {
		t.Fatalf("listed %v", r)
	}
	if _, _, err := run(t, "group", "update", "-n", ns, "-g", "cli-sg", "--consume-enable=false"); err != nil {
		t.Fatal(err)
	}
	r = find()
	if r["consumeEnable"] != false || r["retryMaxTimes"] != 3.0 || r["consumeBroadcastEnable"] != false {
		t.Fatalf("after update %v", r)
	}
	table, _, err := run(t, "group", "list", "-n", ns)
	if err != nil || !strings.Contains(table, "GROUP") || !strings.Contains(table, "cli-sg") {
		t.Fatalf("table list %q: %v", table, err)
	}
	out, _, err = run(t, "group", "delete", "-n", ns, "-g", "cli-sg")
	if err != nil || !strings.Contains(out, "deleted subscription group cli-sg in group broker-a") {
		t.Fatalf("delete printed %q: %v", out, err)
	}
	if r := find(); r != nil {
		t.Fatalf("cli-sg still listed after delete: %v", r)
	}
	var placed []client.Placement
	runJSON(t, &placed, "group", "create", "-n", ns, "-g", "cli-sg2")
	if len(placed) != 1 || placed[0].BrokerName != "broker-a" || placed[0].Addr == "" {
		t.Fatalf("create --output json: %+v", placed)
	}
}

// TestGroupCloneAndSkip: skip-accumulated moves a group without consumers
// to the end of the topic; clone-offset gives another group those offsets,
// and a running consumer of that group restarts from them; reset-offset
// --timestamp before the first message lands on offset 0.
func TestGroupCloneAndSkip(t *testing.T) {
	g, _ := startTopic(t, "cli-clone", 1)
	ns := g.NSAddr
	p := startTestProducer(t, g, "cli-clone-pg")
	sendMessages(t, g, p, "cli-clone", 7)

	var skipped []queueOffsetRow
	runJSON(t, &skipped, "group", "skip-accumulated", "-n", ns, "-g", "cli-src", "-t", "cli-clone")
	if len(skipped) != 1 || skipped[0].Offset != 7 || skipped[0].Topic != "cli-clone" || skipped[0].QueueID != 0 {
		t.Fatalf("skip-accumulated: %+v", skipped)
	}
	progress := func(group string) int64 {
		var rows []struct {
			ConsumerOffset int64 `json:"consumerOffset"`
			Lag            int64 `json:"lag"`
		}
		runJSON(t, &rows, "group", "progress", "-n", ns, "-g", group, "-t", "cli-clone")
		if len(rows) != 1 {
			t.Fatalf("progress of %s: %+v", group, rows)
		}
		return rows[0].ConsumerOffset
	}
	if off := progress("cli-src"); off != 7 {
		t.Fatalf("cli-src committed offset %d after skip, want 7", off)
	}
	out, stderr, err := run(t, "group", "clone-offset", "-n", ns, "--from-group", "cli-src", "--to-group", "cli-dst", "-t", "cli-clone", "--progress")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "group cli-dst: 1 queue(s) set") || !strings.Contains(stderr, "clone-offset [") {
		t.Fatalf("clone printed %q, stderr %q", out, stderr)
	}
	if off := progress("cli-dst"); off != 7 {
		t.Fatalf("cli-dst committed offset %d after clone, want 7", off)
	}
	var reset []queueOffsetRow
	runJSON(t, &reset, "group", "reset-offset", "-n", ns, "-g", "cli-src", "-t", "cli-clone", "--timestamp", "2000-01-01T00:00:00Z")
	if len(reset) != 1 || reset[0].Offset != 0 {
		t.Fatalf("reset to 2000: %+v", reset)
	}
	if off := progress("cli-src"); off != 0 {
		t.Fatalf("cli-src committed offset %d after reset to 2000, want 0", off)
	}
	if off := progress("cli-dst"); off != 7 {
		t.Fatalf("cli-dst moved to %d with cli-src's reset", off)
	}
	// A time after the last message lands on the max offset; reset back.
	runJSON(t, &reset, "group", "reset-offset", "-n", ns, "-g", "cli-src", "-t", "cli-clone", "--timestamp", "now")
	if len(reset) != 1 || reset[0].Offset != 7 {
		t.Fatalf("reset to now: %+v", reset)
	}
	runJSON(t, &reset, "group", "reset-offset", "-n", ns, "-g", "cli-src", "-t", "cli-clone", "--to", "earliest")
	if len(reset) != 1 || reset[0].Offset != 0 {
		t.Fatalf("reset to earliest: %+v", reset)
	}
	// A running consumer of the destination (at 7, nothing to consume)
	// restarts from the offsets a second clone copies.
	d := &deliveries{count: map[int64]int{}, store: map[int64]int64{}}
	pc := startTestConsumer(t, g, "cli-dst", "cli-clone", d.handler)
	g.Eventually(10*time.Second, func() error {
		for _, q := range pc.Assignment() {
			if q.Topic == "cli-clone" {
				return nil
			}
		}
		return fmt.Errorf("assignment %v", pc.Assignment())
	})
	if n, _ := d.snapshot(); len(n) != 0 {
		t.Fatalf("cli-dst at offset 7 consumed %v", n)
	}
	runJSON(t, &reset, "group", "clone-offset", "-n", ns, "-s", "cli-src", "-d", "cli-dst", "-t", "cli-clone")
	if len(reset) != 1 || reset[0].Offset != 0 {
		t.Fatalf("second clone: %+v", reset)
	}
	g.Eventually(20*time.Second, func() error { return d.atLeast(0, 7, 1) })
	// skip-accumulated moves a group forward from an offset it has.
	runJSON(t, &skipped, "group", "skip-accumulated", "-n", ns, "-g", "cli-src", "-t", "cli-clone")
	if len(skipped) != 1 || skipped[0].Offset != 7 || progress("cli-src") != 7 {
		t.Fatalf("skip-accumulated from 0: %+v", skipped)
	}
}

// TestGroupOffsetsWithRunningConsumer: with a push consumer running,
// group connections shows it and its subscription, group stats its
// progress, and reset-offset --to earliest, --timestamp and --to latest
// make it redeliver from (or skip to) the new offsets without a restart.
func TestGroupOffsetsWithRunningConsumer(t *testing.T) {
	const topic, group = "cli-reset", "cli-reset-g"
	g, _ := startTopic(t, topic, 1)
	ns := g.NSAddr
	p := startTestProducer(t, g, "cli-reset-pg")
	sendMessages(t, g, p, topic, 10)
	d := &deliveries{count: map[int64]int{}, store: map[int64]int64{}}
	// One consume goroutine: while the handler waits at the gate, later
	// messages stay in the consumer's cache.
	logs := &logLines{}
	pc := startTestConsumer(t, g, group, topic, d.handler, client.WithConsumeGoroutines(1),
		client.WithLogger(hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: logs})))
	g.Eventually(20*time.Second, func() error { return d.atLeast(0, 10, 1) })

	var cc struct {
		Group            string `json:"group"`
		ConsumeType      string `json:"consumeType"`
		MessageModel     string `json:"messageModel"`
		ConsumeFromWhere string `json:"consumeFromWhere"`
		Connections      []struct {
			ClientID   string `json:"clientId"`
			ClientAddr string `json:"clientAddr"`
			Language   string `json:"language"`
			Version    int32  `json:"version"`
		} `json:"connections"`
		Subscriptions []struct {
			Topic      string `json:"topic"`
			Expression string `json:"expression"`
		} `json:"subscriptions"`
	}
	runJSON(t, &cc, "group", "connections", "-n", ns, "-g", group)
	if len(cc.Connections) != 1 || cc.Connections[0].ClientID != pc.ClientID() || cc.Connections[0].ClientAddr == "" ||
		cc.Connections[0].Language == "" || cc.Connections[0].Version == 0 {
		t.Fatalf("connections %+v, want one with client id %s", cc.Connections, pc.ClientID())
	}
	if cc.MessageModel != "CLUSTERING" || cc.ConsumeType != "CONSUME_PASSIVELY" || cc.ConsumeFromWhere == "" {
		t.Fatalf("connections %+v", cc)
	}
	var sawTopic bool
	for _, s := range cc.Subscriptions {
		sawTopic = sawTopic || (s.Topic == topic && s.Expression == "*")
	}
	if !sawTopic {
		t.Fatalf("subscriptions %+v lack %s *", cc.Subscriptions, topic)
	}
	table, _, err := run(t, "group", "connections", "-n", ns, "-g", group)
	if err != nil || !strings.Contains(table, pc.ClientID()) || !strings.Contains(table, "message model: CLUSTERING") {
		t.Fatalf("connections table %q: %v", table, err)
	}

	_, store := d.snapshot()
	g.Eventually(20*time.Second, func() error {
		var st consumeStatsOut
		out, _, err := run(t, "group", "stats", "-n", ns, "-g", group, "-t", topic, "-o", "json")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return err
		}
		if len(st.Queues) != 1 || st.Queues[0].BrokerOffset != 10 || st.Queues[0].ConsumerOffset != 10 || st.Queues[0].Lag != 0 ||
			st.Lag != 0 || st.Queues[0].LastTimestamp != store[9] || st.ConsumeTps <= 0 {
			return fmt.Errorf("stats %+v, want offsets 10/10, last timestamp %d, tps > 0", st, store[9])
		}
		return nil
	})

	table, _, err = run(t, "group", "stats", "-n", ns, "-g", group)
	if err != nil || !strings.Contains(table, "LAST CONSUMED") || !strings.Contains(table, "consume TPS:") || !strings.Contains(table, "total lag: 0") {
		t.Fatalf("stats table %q: %v", table, err)
	}
	var offs []queueOffsetRow
	runJSON(t, &offs, "group", "reset-offset", "-n", ns, "-g", group, "-t", topic, "--to", "earliest")
	if len(offs) != 1 || offs[0].Offset != 0 {
		t.Fatalf("reset to earliest: %+v", offs)
	}
	g.Eventually(20*time.Second, func() error { return d.atLeast(0, 10, 2) })

	// A time between messages: the first stored at or after it is where
	// the consumer starts again; those before are not redelivered.
	ts := store[5]
	want := int64(10)
	for off := int64(9); off >= 0; off-- {
		if store[off] >= ts {
			want = off
		}
	}
	runJSON(t, &offs, "group", "reset-offset", "-n", ns, "-g", group, "-t", topic, "--timestamp", strconv.FormatInt(ts, 10))
	if len(offs) != 1 || offs[0].Offset != want {
		t.Fatalf("reset to %d: %+v, want offset %d", ts, offs, want)
	}
	g.Eventually(20*time.Second, func() error { return d.atLeast(want, 10, 3) })
	counts, _ := d.snapshot()
	for off := range want {
		if counts[off] != 2 {
			t.Errorf("offset %d (before the reset time) delivered %d times, want 2", off, counts[off])
		}
	}

	// --to latest while the consumer is behind (its handler held on
	// offset 10, 11-14 cached): the reset moves it forward past what is
	// stored, so 11-14 are never delivered, and what comes next is.
	before, _ := d.snapshot()
	gate := make(chan struct{})
	d.setGate(gate)
	sendMessages(t, g, p, topic, 5)
	g.Eventually(20*time.Second, func() error { return d.atLeast(10, 11, 1) })
	out, stderr, err := run(t, "group", "reset-offset", "-n", ns, "-g", group, "-t", topic, "--to", "latest", "--progress", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	// The broker tells the consumer oneway: open the gate once it has
	// restarted the queue at the new offset.
	g.Eventually(10*time.Second, func() error { return logs.has("offset reset by the broker", "offset=15") })
	d.setGate(nil)
	close(gate)
	if err := json.Unmarshal([]byte(out), &offs); err != nil || len(offs) != 1 || offs[0].Offset != 15 {
		t.Fatalf("reset to latest printed %q (%v), want offset 15", out, err)
	}
	if !strings.Contains(stderr, "reset-offset [####################] 1/1") {
		t.Fatalf("reset to latest --progress: stderr %q", stderr)
	}
	sendMessages(t, g, p, topic, 2)
	g.Eventually(20*time.Second, func() error { return d.atLeast(15, 17, 1) })
	counts, _ = d.snapshot()
	for off := range int64(17) {
		switch {
		case off < 10 && counts[off] != before[off]:
			t.Errorf("offset %d delivered again after reset to latest (%d, was %d)", off, counts[off], before[off])
		case off > 10 && off < 15 && counts[off] != 0:
			t.Errorf("offset %d, skipped by the reset to latest, delivered %d times", off, counts[off])
		case (off == 10 || off >= 15) && counts[off] != 1:
			t.Errorf("offset %d delivered %d times, want 1", off, counts[off])
		}
	}
}

// TestProducerConnections: producer connections lists a running
// producer's client; an unknown group fails with the broker's code.
func TestProducerConnections(t *testing.T) {
	g, _ := startTopic(t, "cli-producer", 1)
	p := startTestProducer(t, g, "cli-pg")
	// A producer heartbeats the brokers of the topics it has routes for.
	sendMessages(t, g, p, "cli-producer", 1)
	var rows []struct {
		ClientID   string `json:"clientId"`
		ClientAddr string `json:"clientAddr"`
		Language   string `json:"language"`
	}
	g.Eventually(10*time.Second, func() error {
		out, _, err := run(t, "producer", "connections", "-n", g.NSAddr, "-g", "cli-pg", "-o", "json")
		if err != nil {
			return err
		}
		return json.Unmarshal([]byte(out), &rows)
	})
	if len(rows) != 1 || rows[0].ClientID != p.ClientID() || rows[0].ClientAddr == "" || rows[0].Language == "" {
		t.Fatalf("producer connections %+v, want client %s", rows, p.ClientID())
	}
	_, _, err := run(t, "producer", "connections", "-n", g.NSAddr, "-g", "cli-nobody")
	if err == nil || !strings.Contains(err.Error(), "GET_PRODUCER_CONNECTION_LIST") || !strings.Contains(err.Error(), "SYSTEM_ERROR") ||
		!strings.Contains(err.Error(), "127.0.0.1:") {
		t.Fatalf("unknown producer group: %v", err)
	}
	_, _, err = run(t, "group", "connections", "-n", g.NSAddr, "-g", "cli-nobody")
	if err == nil || !strings.Contains(err.Error(), "GET_CONSUMER_CONNECTION_LIST") || !strings.Contains(err.Error(), "CONSUMER_NOT_ONLINE") {
		t.Fatalf("unknown consumer group: %v", err)
	}
}

// TestGroupBadInput: missing or malformed flags fail before any request.
func TestGroupBadInput(t *testing.T) {
	ns := "127.0.0.1:1" // nothing listens: a request would fail differently
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"group", "reset-offset", "-g", "x", "--to", "latest"}, `"topic"`},
		{[]string{"group", "reset-offset", "-g", "x", "-t", "y"}, "give --timestamp"},
		{[]string{"group", "reset-offset", "-g", "x", "-t", "y", "--timestamp", "yesterday"}, "neither RFC3339"},
		{[]string{"group", "reset-offset", "-g", "x", "-t", "y", "--timestamp", "-5"}, "must not be negative"},
		{[]string{"group", "reset-offset", "-g", "x", "-t", "y", "--to", "middle"}, `unknown --to "middle"`},
		{[]string{"group", "reset-offset", "-g", "x", "-t", "y", "--to", "latest", "--timestamp", "1"}, "not both"},
		{[]string{"group", "clone-offset", "--from-group", "a", "--to-group", "a", "-t", "y"}, "both"},
		{[]string{"group", "clone-offset", "--from-group", "a", "-t", "y"}, `"to-group"`},
		{[]string{"group", "skip-accumulated", "-g", "x"}, `"topic"`},
		{[]string{"group", "create", "-g", "x", "--retry-queues", "-1"}, "must not be negative"},
		{[]string{"group", "stats"}, `"group"`},
		{[]string{"producer", "connections"}, `"group"`},
	} {
		_, _, err := run(t, append(tc.args, "-n", ns)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %s", tc.args, err, tc.want)
		}
	}
}

// logLines keeps what a client logs, for a test to wait on.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.lines = append(l.lines, string(p))
	l.mu.Unlock()
	return len(p), nil
}

// has reports an error unless some line holds every one of parts.
func (l *logLines) has(parts ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("no log line with %q", parts)
}

// TestGroupParseResetTime: --timestamp takes RFC3339, unix ms, mqadmin's
// format in local time and now.
func TestGroupParseResetTime(t *testing.T) {
	want := time.Date(2026, 1, 2, 15, 4, 5, 123e6, time.UTC)
	for _, s := range []string{"2026-01-02T15:04:05.123Z", "2026-01-02T16:04:05.123+01:00", strconv.FormatInt(want.UnixMilli(), 10),
		want.In(time.Local).Format("2006-01-02#15:04:05") + ":123"} {
		got, err := parseResetTime(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseResetTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	before := time.Now()
	if got, err := parseResetTime("NOW"); err != nil || got.Before(before) || time.Since(got) > time.Minute {
		t.Errorf("parseResetTime(now) = %v, %v", got, err)
	}
	for _, s := range []string{"", "2026-01-02", "2026-01-02#15:04:05", "2026-01-02#15:04:05:12", "tomorrow"} {
		if _, err := parseResetTime(s); err == nil {
			t.Errorf("parseResetTime(%q) succeeded", s)
		}
	}
}
