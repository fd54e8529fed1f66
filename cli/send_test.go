package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/client"
)

// TestSendFailsFastOnBadInput (issue 15, bad input): an illegal topic is
// refused before any request, not retried until the send timeout; a stdin
// line over the reader's limit names the limit.
func TestSendFailsFastOnBadInput(t *testing.T) {
	start := time.Now()
	_, _, err := run(t, "send", "--namesrv", "127.0.0.1:1", "--topic", "bad topic!", "--body", "x", "--timeout", "10s")
	if err == nil || !strings.Contains(err.Error(), "illegal characters") {
		t.Fatalf("send to an illegal topic: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("an illegal topic took %v to refuse: it was retried", d)
	}
	g := brokertest.Start(t, brokertest.Options{})
	g.WaitLeader(10 * time.Second)
	var out, errOut bytes.Buffer
	app := App(&out, &errOut)
	app.Reader = bytes.NewReader(bytes.Repeat([]byte("a"), client.DefaultMaxMessageSize+1))
	err = app.Run([]string{"raftmq", "send", "--namesrv", g.NSAddr, "--topic", "t", "--timeout", "1s"})
	if err == nil || !strings.Contains(err.Error(), "longer than 4194304 bytes") {
		t.Fatalf("an over-long stdin line: %v", err)
	}
}

// TestSendOutputJSON: send --output json prints one result object per
// message, with the queue and offset it was stored at.
func TestSendOutputJSON(t *testing.T) {
	g, _ := startTopic(t, "cli-send-json", 1)
	out, _, err := run(t, "send", "-n", g.NSAddr, "-t", "cli-send-json", "-b", "x", "--count", "2", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("printed %q", out)
	}
	for i, l := range lines {
		var r sentJSON
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if r.Status != "SEND_OK" || r.MsgID == "" || r.OffsetMsgID == "" || r.BrokerName != "broker-a" || r.QueueOffset != int64(i) {
			t.Errorf("result %d: %+v", i, r)
		}
	}
}
