package client

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

// TestParseSelector: an SQL92 selector keeps its (trimmed) condition and
// has no tags, so nothing is filtered locally; an empty condition or an
// unknown type is an ErrInvalidOption; the zero type is a tag expression.
func TestParseSelector(t *testing.T) {
	s, err := parseSelector("T", SQL92("  a > 5 AND TAGS IN ('x') "))
	if err != nil {
		t.Fatal(err)
	}
	if s.expr != "a > 5 AND TAGS IN ('x')" || s.typ != protocol.ExprSQL92 || s.tags != nil {
		t.Fatalf("SQL92 subscription %+v", s)
	}
	m := &message.MessageExt{}
	m.SetTags("y") // the broker decided: a tag the condition names is no filter here
	if !s.matches(m) {
		t.Error("an SQL92 subscription dropped a message the broker sent")
	}
	sd := s.data()
	if sd.ExpressionType != protocol.ExprSQL92 || sd.SubString != s.expr || len(sd.TagsSet) != 0 || len(sd.CodeSet) != 0 ||
		sd.Topic != "T" || sd.SubVersion == 0 {
		t.Errorf("SQL92 heartbeat data %+v", sd)
	}
	for _, sel := range []MessageSelector{{Expression: "A || B"}, Tag("A || B")} {
		s, err := parseSelector("T", sel)
		if err != nil {
			t.Fatal(err)
		}
		if s.typ != protocol.ExprTag || s.expr != "A || B" || len(s.tags) != 2 || s.data().ExpressionType != protocol.ExprTag {
			t.Errorf("%v: %+v", sel, s)
		}
	}
	for _, bad := range []MessageSelector{SQL92(""), SQL92("   "), {Type: "CLASS", Expression: "x"}, Tag("||")} {
		if _, err := parseSelector("T", bad); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%v: %v, want ErrInvalidOption", bad, err)
		}
	}
	if _, err := parseSelector("", SQL92("a > 1")); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("empty topic: %v", err)
	}
}

// TestPullRequestSelector: PULL_MESSAGE carries the subscription's
// expression and its type, SQL92 or TAG.
func TestPullRequestSelector(t *testing.T) {
	gm := &groupMember{cfg: &consumerConfig{group: "g", pullBatch: 8, suspend: time.Second}, subs: map[string]*subscription{}}
	for _, c := range []struct {
		sel      MessageSelector
		typ, sub string
	}{
		{SQL92("a > 5"), "SQL92", "a > 5"},
		{Tag("A||B"), "TAG", "A||B"},
		{Tag(""), "TAG", "*"},
	} {
		s, err := parseSelector("T", c.sel)
		if err != nil {
			t.Fatal(err)
		}
		gm.subs["T"] = s
		req := gm.pullRequest(&queueState{mq: MessageQueue{Topic: "T", BrokerName: "b"}, pq: newProcessQueue(0)}, 3)
		h, err := protocol.DecodePullMessageHeader(req.ExtFields)
		if err != nil {
			t.Fatal(err)
		}
		if h.ExpressionType != c.typ || h.Subscription != c.sub || h.SysFlag&protocol.PullFlagSubscription == 0 {
			t.Errorf("%v: pull header type %q subscription %q flag %b", c.sel, h.ExpressionType, h.Subscription, h.SysFlag)
		}
	}
}

// sqlMessages sends 60 messages to topic: a = i except every fifth
// (no a), tag x for even i, y for odd. It returns the bodies and which
// ones "a > 5 AND TAGS IN ('x')" selects.
func sqlMessages(t *testing.T, p *Producer, topic string) (bodies []string, want map[string]bool) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	want = map[string]bool{}
	for i := range 60 {
		m := newMsg(topic, fmt.Sprintf("m-%d", i))
		tag := "y"
		if i%2 == 0 {
			tag = "x"
		}
		m.SetTags(tag)
		if i%5 != 0 {
			m.SetProperty("a", fmt.Sprint(i))
		}
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		bodies = append(bodies, string(m.Body))
		want[string(m.Body)] = i%5 != 0 && i > 5 && tag == "x"
	}
	return bodies, want
}

// sendLate sends a message the condition selects, after the others: on
// a one-queue topic, once it is consumed everything before it was pulled.
func sendLate(t *testing.T, p *Producer, topic string) string {
	m := newMsg(topic, "late")
	m.SetTags("x")
	m.SetProperty("a", "1000")
	if _, err := p.Send(testCtx(t, 10*time.Second), m); err != nil {
		t.Fatal(err)
	}
	return "late"
}

func checkSelected(t *testing.T, bodies []string, want map[string]bool, got map[string]int) {
	t.Helper()
	n := 0
	for _, b := range bodies {
		if (got[b] > 0) != want[b] {
			t.Errorf("%s: delivered %d times, selected %v", b, got[b], want[b])
		}
		if want[b] {
			n++
		}
	}
	if n == 0 || n == len(bodies) {
		t.Fatalf("the condition selects %d of %d: the test proves nothing", n, len(bodies))
	}
}

// TestPushSubscribeSQL92: a push consumer's SQL92 subscription receives
// exactly the messages the condition selects.
func TestPushSubscribeSQL92(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "sqlpush", 1)
	p := startProducer(t, g)
	bodies, want := sqlMessages(t, p, "sqlpush")
	c := newCollector()
	pc, err := NewPushConsumer("cg-sqlpush", pushOpts(t, g, "c1", WithConsumeFrom(ConsumeFromFirst()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(testCtx(t, 10*time.Second)) })
	if err := pc.SubscribeSelector("sqlpush", SQL92("a > 5 AND TAGS IN ('x')"), c.handler); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(testCtx(t, 15*time.Second)); err != nil {
		t.Fatal(err)
	}
	late := sendLate(t, p, "sqlpush")
	waitFor(t, 20*time.Second, "the late message", func() bool { return c.bodies()[late] > 0 })
	if err := pc.Close(testCtx(t, 10*time.Second)); err != nil { // handlers drained
		t.Fatal(err)
	}
	checkSelected(t, bodies, want, c.bodies())
}

// TestPullSubscribeSQL92: a pull consumer's SQL92 subscription polls
// exactly the messages the condition selects.
func TestPullSubscribeSQL92(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "sqlpull", 1)
	p := startProducer(t, g)
	bodies, want := sqlMessages(t, p, "sqlpull")
	late := sendLate(t, p, "sqlpull")
	pc := startPull(t, g, "cg-sqlpull", "p1", func(pc *PullConsumer) error {
		return pc.SubscribeSelector("sqlpull", SQL92("a > 5 AND TAGS IN ('x')"))
	}, WithConsumeFrom(ConsumeFromFirst()))
	got := map[string]int{}
	ctx := testCtx(t, 20*time.Second)
	for got[late] == 0 {
		msgs, err := pc.Poll(ctx)
		if err != nil {
			t.Fatalf("poll: %v (got %d)", err, len(got))
		}
		for _, m := range msgs {
			got[string(m.Body)]++
		}
	}
	checkSelected(t, bodies, want, got)
}

// timedLines is an hclog output that keeps each line and when it came.
type timedLines struct {
	mu    sync.Mutex
	lines []string
	at    []time.Time
}

func (l *timedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		l.lines, l.at = append(l.lines, string(line)), append(l.at, time.Now())
	}
	return len(p), nil
}

// find returns when each line containing all of subs came.
func (l *timedLines) find(subs ...string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
next:
	for i, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, l.at[i])
	}
	return out
}

// TestSQL92ParseFailureLogged: a condition the broker cannot parse is
// logged as an error naming SUBSCRIPTION_PARSE_FAILED, once, and the
// queue retries it only after the error backoff, not in a hot loop.
func TestSQL92ParseFailureLogged(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "sqlbad", 1)
	logs := &timedLines{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "client", Level: hclog.Debug, Output: logs})
	startPull(t, g, "cg-sqlbad", "p1", func(pc *PullConsumer) error {
		return pc.SubscribeSelector("sqlbad", SQL92("a > AND"))
	}, WithLogger(logger))
	waitFor(t, 20*time.Second, "a second refusal", func() bool {
		return len(logs.find("subscription refused again", "SUBSCRIPTION_PARSE_FAILED")) >= 1
	})
	first := logs.find("[ERROR]", "refused the subscription", "SUBSCRIPTION_PARSE_FAILED")
	again := logs.find("subscription refused again")
	if len(first) != 1 {
		t.Fatalf("%d error lines for the refusal, want 1", len(first))
	}
	if gap := again[0].Sub(first[0]); gap < pullErrorBackoff-200*time.Millisecond {
		t.Errorf("retried %v after the refusal, want about %v", gap, pullErrorBackoff)
	}
}
