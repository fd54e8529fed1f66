package cli

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
)

func bodies(ms []messageJSON) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Body)
	}
	return out
}

// TestMessageQuery: query by unique key finds exactly the sent message with
// every JSON field filled; query by key honours --begin/--end (a range
// before the send finds nothing, one around it finds it); bad input fails
// before any lookup.
func TestMessageQuery(t *testing.T) {
	g, _ := startTopic(t, "cli-query", 1)
	before := time.Now().Add(-time.Second)
	id1, off1 := sendCLI(t, g, "cli-query", "-b", "alpha", "--keys", "k1", "--tag", "TA")
	sendCLI(t, g, "cli-query", "-b", "beta", "--keys", "k2")
	after := time.Now().Add(time.Second)

	var got []messageJSON
	g.Eventually(10*time.Second, func() error {
		out, _, err := run(t, "message", "query", "-n", g.NSAddr, "-t", "cli-query", "--unique-key", id1, "-o", "json")
		if err != nil {
			return err
		}
		return json.Unmarshal([]byte(out), &got)
	})
	if len(got) != 1 {
		t.Fatalf("unique key query found %d: %+v", len(got), got)
	}
	m := got[0]
	if m.Topic != "cli-query" || m.MsgID != id1 || m.OffsetMsgID != off1 || m.BrokerName != "broker-a" || m.QueueID != 0 ||
		m.QueueOffset != 0 || m.Body != "alpha" || m.Tags != "TA" || !slices.Equal(m.Keys, []string{"k1"}) ||
		m.Properties[message.PropertyUniqKey] != id1 || m.StoreTimestamp < before.UnixMilli() || m.BornTimestamp == 0 {
		t.Fatalf("unique key query: %+v", m)
	}
	out, _, err := run(t, "message", "query", "-n", g.NSAddr, "-t", "cli-query", "-u", id1)
	if err != nil || !strings.Contains(out, off1) || !strings.Contains(out, "broker-a") {
		t.Fatalf("unique key table: %q, %v", out, err)
	}

	ms := func(t time.Time) string { return fmt.Sprint(t.UnixMilli()) }
	runJSON(t, &got, "message", "query", "-n", g.NSAddr, "-t", "cli-query", "-k", "k2",
		"--begin", before.UTC().Format(time.RFC3339Nano), "--end", ms(after))
	if !slices.Equal(bodies(got), []string{"beta"}) {
		t.Fatalf("key query in range: %+v", got)
	}
	early := before.Add(-time.Hour)
	_, _, err = run(t, "message", "query", "-n", g.NSAddr, "-t", "cli-query", "-k", "k2", "--begin", ms(early), "--end", ms(before))
	if err == nil || !strings.Contains(err.Error(), "no message") {
		t.Fatalf("key query before the send: %v", err)
	}
	_, _, err = run(t, "message", "query", "-n", g.NSAddr, "-t", "cli-query", "-u", id1, "--begin", ms(early), "--end", ms(before))
	if err == nil || !strings.Contains(err.Error(), "no message") {
		t.Fatalf("unique key query before the send: %v", err)
	}

	// --since counts back from --end.
	runJSON(t, &got, "message", "query", "-n", g.NSAddr, "-t", "cli-query", "-k", "k2", "--end", ms(after), "--since", "1m")
	if !slices.Equal(bodies(got), []string{"beta"}) {
		t.Fatalf("key query --since 1m before --end: %+v", got)
	}
	_, _, err = run(t, "message", "query", "-n", g.NSAddr, "-t", "cli-query", "-k", "k2", "--end", ms(before.Add(-100*time.Hour)))
	if err == nil || !strings.Contains(err.Error(), "no message") {
		t.Fatalf("key query --end 100h before the send: %v", err)
	}

	// message trace --output json: a trace record written under the
	// message's id to a trace topic comes back in lowerCamel.
	if _, _, err := run(t, "topic", "create", "-n", g.NSAddr, "-t", "cli-trace", "-q", "1"); err != nil {
		t.Fatal(err)
	}
	rec := protocol.TraceRecord{Type: protocol.TracePub, Timestamp: time.Now().UnixMilli(), Group: "cli-pg", Topic: "cli-query",
		MsgID: id1, OffsetMsgID: off1, Success: true, CostTime: 3, BodyLength: 5}
	sendCLI(t, g, "cli-trace", "-b", string(rec.Encode()), "--keys", id1)
	var tr struct {
		MsgID   string `json:"msgId"`
		Records []struct {
			Type, Event, Group, Topic, OffsetMsgID string
			Success                                bool
			CostTime                               int64 `json:"costTime"`
		} `json:"records"`
	}
	runJSON(t, &tr, "message", "trace", "-n", g.NSAddr, "--id", id1, "--trace-topic", "cli-trace")
	if tr.MsgID != id1 || len(tr.Records) != 1 || tr.Records[0].Event != "sent" || tr.Records[0].Group != "cli-pg" ||
		tr.Records[0].OffsetMsgID != off1 || !tr.Records[0].Success || tr.Records[0].CostTime != 3 {
		t.Fatalf("trace JSON: %+v", tr)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no key", nil, "give one of --key and --unique-key"},
		{"both keys", []string{"-k", "k1", "-u", id1}, "give one of --key and --unique-key"},
		{"bad begin", []string{"-k", "k1", "--begin", "yesterday"}, `--begin "yesterday": want RFC3339`},
		{"bad end", []string{"-k", "k1", "--end", "2026-13-01"}, `--end "2026-13-01"`},
		{"begin after end", []string{"-k", "k1", "--begin", ms(after), "--end", ms(before)}, "is after --end"},
		{"bad body format", []string{"-k", "k1", "--body-format", "xml"}, `--body-format "xml"`},
	} {
		_, _, err := run(t, append([]string{"message", "query", "-n", g.NSAddr, "-t", "cli-query"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestMessageView: view by queue offset returns the message stored there
// (and the same as view by its offsetMsgId), an offset past the end is an
// error, a write-only topic's pull is refused with the broker's code.
func TestMessageView(t *testing.T) {
	g, _ := startTopic(t, "cli-view", 1)
	_, off0 := sendCLI(t, g, "cli-view", "-b", "first")
	id1, _ := sendCLI(t, g, "cli-view", "-b", "second", "--keys", "kv")

	var m messageJSON
	runJSON(t, &m, "message", "view", "-n", g.NSAddr, "-t", "cli-view", "-b", "broker-a", "-q", "0", "--offset", "1")
	if m.Body != "second" || m.MsgID != id1 || m.QueueOffset != 1 || m.BrokerName != "broker-a" || !slices.Equal(m.Keys, []string{"kv"}) {
		t.Fatalf("view offset 1: %+v", m)
	}
	runJSON(t, &m, "message", "view", "-n", g.NSAddr, "--id", off0)
	if m.Body != "first" || m.QueueOffset != 0 || m.OffsetMsgID != off0 || m.BrokerName != "broker-a" {
		t.Fatalf("view by id: %+v", m)
	}
	out, _, err := run(t, "message", "view", "-n", g.NSAddr, "-t", "cli-view", "-b", "broker-a", "-q", "0", "--offset", "0", "--body-format", "hex")
	if err != nil || !strings.Contains(out, hex.EncodeToString([]byte("first"))) || !strings.Contains(out, off0) {
		t.Fatalf("view table: %q, %v", out, err)
	}
	_, _, err = run(t, "message", "view", "-n", g.NSAddr, "-t", "cli-view", "-b", "broker-a", "-q", "0", "--offset", "7")
	if err == nil || !strings.Contains(err.Error(), "message not found") || !strings.Contains(err.Error(), "offset 7") {
		t.Fatalf("view past the end: %v", err)
	}
	for name, args := range map[string][]string{
		"nothing":        {},
		"id and offset":  {"--id", off0, "-t", "cli-view"},
		"partial offset": {"-t", "cli-view", "--offset", "0"},
	} {
		if _, _, err := run(t, append([]string{"message", "view", "-n", g.NSAddr}, args...)...); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%s: %v", name, err)
		}
	}

	if _, _, err := run(t, "topic", "perm", "-n", g.NSAddr, "-t", "cli-view", "--perm", "2"); err != nil {
		t.Fatal(err)
	}
	_, _, err = run(t, "message", "view", "-n", g.NSAddr, "-t", "cli-view", "-b", "broker-a", "-q", "0", "--offset", "0")
	if err == nil || !strings.Contains(err.Error(), "NO_PERMISSION (16)") || !strings.Contains(err.Error(), "PULL_MESSAGE") {
		t.Fatalf("view of a write-only topic: %v", err)
	}
	_, _, err = run(t, "message", "print", "-n", g.NSAddr, "-t", "cli-view")
	if err == nil || !strings.Contains(err.Error(), "no readable queue") {
		t.Fatalf("print of a write-only topic: %v", err)
	}
}

// TestMessagePrint: print gives a queue's offset range exactly and in
// order, the messages of a store-time range, every queue of a topic (with
// the progress bar on stderr), stops at --max, prints [] for nothing, and
// refuses bad input.
func TestMessagePrint(t *testing.T) {
	g, _ := startTopic(t, "cli-print", 1)
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprint("p", i))
		sendCLI(t, g, "cli-print", "-b", want[i])
	}
	var all []messageJSON
	runJSON(t, &all, "message", "print", "-n", g.NSAddr, "-t", "cli-print")
	if !slices.Equal(bodies(all), want) {
		t.Fatalf("print all: %v", bodies(all))
	}
	for i, m := range all {
		if m.QueueOffset != int64(i) || m.BrokerName != "broker-a" || m.MsgID == "" {
			t.Fatalf("message %d: %+v", i, m)
		}
	}

	var got []messageJSON
	runJSON(t, &got, "message", "print", "-n", g.NSAddr, "-t", "cli-print", "-b", "broker-a", "-q", "0",
		"--begin-offset", "2", "--end-offset", "5")
	if !slices.Equal(bodies(got), []string{"p2", "p3", "p4"}) {
		t.Fatalf("offsets [2,5): %v", bodies(got))
	}
	out, _, err := run(t, "message", "print", "-n", g.NSAddr, "-t", "cli-print", "--begin-offset", "8")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || !strings.Contains(lines[0], `body="p8"`) || !strings.Contains(lines[1], `body="p9"`) ||
		!strings.HasPrefix(lines[0], "broker-a#0 offset=8 ") {
		t.Fatalf("table from offset 8: %q, %v", out, err)
	}
	runJSON(t, &got, "message", "print", "-n", g.NSAddr, "-t", "cli-print", "--max", "3")
	if !slices.Equal(bodies(got), want[:3]) {
		t.Fatalf("--max 3: %v", bodies(got))
	}
	out, _, err = run(t, "message", "print", "-n", g.NSAddr, "-t", "cli-print", "--begin-offset", "10", "-o", "json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("empty range: %q, %v", out, err)
	}

	// A store-time range: what it prints must be exactly the messages
	// whose store time lies in it.
	lo, hi := all[3].StoreTimestamp, all[6].StoreTimestamp
	var inRange []string
	for _, m := range all {
		if m.StoreTimestamp >= lo && m.StoreTimestamp <= hi {
			inRange = append(inRange, m.Body)
		}
	}
	runJSON(t, &got, "message", "print", "-n", g.NSAddr, "-t", "cli-print", "--begin", fmt.Sprint(lo), "--end", fmt.Sprint(hi))
	if !slices.Equal(bodies(got), inRange) || !slices.Contains(inRange, "p3") || !slices.Contains(inRange, "p6") {
		t.Fatalf("time range [%d,%d]: %v, want %v", lo, hi, bodies(got), inRange)
	}

	var upTo []string
	for _, m := range all {
		if m.StoreTimestamp <= lo {
			upTo = append(upTo, m.Body)
		}
	}
	runJSON(t, &got, "message", "print", "-n", g.NSAddr, "-t", "cli-print", "--end", time.UnixMilli(lo).UTC().Format(time.RFC3339Nano))
	if !slices.Equal(bodies(got), upTo) || !slices.Contains(upTo, "p0") || slices.Contains(upTo, "p9") {
		t.Fatalf("--end %d only: %v, want %v", lo, bodies(got), upTo)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"begin after end offset", []string{"--begin-offset", "5", "--end-offset", "2"}, "--begin-offset 5 is after --end-offset 2"},
		{"negative begin offset", []string{"--begin-offset", "-1"}, "negative"},
		{"offsets and times", []string{"--begin-offset", "1", "--begin", "0"}, "not both"},
		{"unknown broker", []string{"-b", "broker-z"}, "no queues on broker group broker-z (it is on broker-a)"},
		{"unknown queue", []string{"-q", "3"}, "no read queue 3"},
		{"bad time", []string{"--end", "noon"}, `--end "noon"`},
		{"begin after end time", []string{"--begin", fmt.Sprint(hi), "--end", fmt.Sprint(lo)}, "is after --end"},
		{"bad body format", []string{"--body-format", "xml"}, "xml"},
		{"bad output", []string{"-o", "yaml"}, "yaml"},
	} {
		_, _, err := run(t, append([]string{"message", "print", "-n", g.NSAddr, "-t", "cli-print"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestMessagePrintQueues: printing every queue of a multi-queue topic
// gives every message once, queue by queue in offset order, and draws one
// progress step per queue on stderr with --progress.
func TestMessagePrintQueues(t *testing.T) {
	g, _ := startTopic(t, "cli-print-q", 3)
	sent := map[string]bool{}
	for i := range 9 {
		b := fmt.Sprint("q", i)
		sent[b] = true
		sendCLI(t, g, "cli-print-q", "-b", b)
	}
	out, errOut, err := run(t, "message", "print", "-n", g.NSAddr, "-t", "cli-print-q", "--progress", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got []messageJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if len(got) != len(sent) {
		t.Fatalf("printed %d messages, sent %d: %v", len(got), len(sent), bodies(got))
	}
	next := map[int32]int64{}
	lastQueue := int32(-1)
	for _, m := range got {
		if !sent[m.Body] {
			t.Fatalf("printed %q twice or never sent", m.Body)
		}
		delete(sent, m.Body)
		if m.QueueID < lastQueue || m.QueueOffset != next[m.QueueID] {
			t.Fatalf("out of order at %+v (next offset %d)", m, next[m.QueueID])
		}
		lastQueue, next[m.QueueID] = m.QueueID, m.QueueOffset+1
	}
	if !strings.Contains(errOut, "printing cli-print-q") || !strings.Contains(errOut, "3/3") || strings.Count(errOut, "\n") != 3 {
		t.Fatalf("progress: %q", errOut)
	}
}
