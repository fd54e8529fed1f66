package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// startTopic starts a group and creates topic with queues queues on it.
// sendCLI sends body to queue 0.. of topic with raftmq send and returns
// the msgId and offsetMsgId it printed.
func sendCLI(t *testing.T, g *brokertest.Group, topic string, args ...string) (string, string) {
	t.Helper()
	out, _, err := run(t, append([]string{"send", "-n", g.NSAddr, "-t", topic}, args...)...)
	if err != nil {
		t.Fatalf("send %v: %v", args, err)
	}
	var id, offID string
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "msgId="); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(f, "offsetMsgId="); ok {
			offID = v
		}
	}
	if id == "" || offID == "" {
		t.Fatalf("send printed %q", out)
	}
	g.WaitApplied(10 * time.Second)
	return id, offID
}

// TestTopicStatus: topic status reports every queue of the topic with the
// max offset the sends reached and the store time of the last message.
func TestTopicStatus(t *testing.T) {
	g, _ := startTopic(t, "cli-status", 2)
	before := time.Now().Add(-time.Second).UnixMilli()
	for i := range 5 {
		sendCLI(t, g, "cli-status", "-b", fmt.Sprint("m", i))
	}
	var stats []queueStatsJSON
	runJSON(t, &stats, "topic", "status", "-n", g.NSAddr, "-t", "cli-status")
	if len(stats) != 2 {
		t.Fatalf("status has %d queues, want 2: %+v", len(stats), stats)
	}
	var total int64
	for i, s := range stats {
		if s.Topic != "cli-status" || s.BrokerName != "broker-a" || s.QueueID != int32(i) || s.MinOffset != 0 {
			t.Errorf("queue %d: %+v", i, s)
		}
		if s.MaxOffset > 0 && s.LastUpdateTimestamp < before {
			t.Errorf("queue %d has messages but last update %d", i, s.LastUpdateTimestamp)
		}
		total += s.MaxOffset
	}
	if total != 5 {
		t.Fatalf("max offsets sum to %d after 5 sends: %+v", total, stats)
	}
	out, _, err := run(t, "topic", "status", "-n", g.NSAddr, "-t", "cli-status")
	if err != nil || !strings.Contains(out, "MAX OFFSET") || strings.Count(out, "broker-a") != 2 {
		t.Fatalf("table: %q, %v", out, err)
	}
	if _, _, err := run(t, "topic", "status", "-n", g.NSAddr, "-t", "cli-status", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Fatalf("--output yaml: %v", err)
	}
}

// TestTopicPerm: perm 4 makes the topic read-only (the broker refuses a
// send with NO_PERMISSION, the CLI's send finds no writable queue) while
// keeping its queue count; perm 6 restores writes; a bad perm fails before
// anything is asked.
func TestTopicPerm(t *testing.T) {
	g, leader := startTopic(t, "cli-perm", 3)
	var placed []placementJSON
	runJSON(t, &placed, "topic", "perm", "-n", g.NSAddr, "-t", "cli-perm", "--perm", "4")
	if len(placed) != 1 || placed[0].BrokerName != "broker-a" || placed[0].Perm != 4 || placed[0].Addr == "" || placed[0].Topic != "cli-perm" {
		t.Fatalf("perm 4 placed %+v", placed)
	}
	var rd protocol.TopicRouteData
	runJSON(t, &rd, "topic", "route", "-n", g.NSAddr, "-t", "cli-perm")
	if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].Perm != 4 || rd.QueueDatas[0].ReadQueueNums != 3 || rd.QueueDatas[0].WriteQueueNums != 3 {
		t.Fatalf("route after perm 4: %+v", rd.QueueDatas)
	}
	h := protocol.SendMessageHeader{ProducerGroup: "cli-perm-p", Topic: "cli-perm", QueueID: 0, BornTimestamp: time.Now().UnixMilli()}
	resp := g.Invoke(leader, remoting.NewRequest(remoting.ReqSendMessageV2, h.ExtV2(), []byte("refused")))
	if resp.Code != remoting.ResNoPermission {
		t.Fatalf("send to a read-only topic answered %d %q, want NO_PERMISSION", resp.Code, resp.Remark)
	}
	if _, _, err := run(t, "send", "-n", g.NSAddr, "-t", "cli-perm", "-b", "refused"); err == nil || !strings.Contains(err.Error(), "no writable queue") {
		t.Fatalf("CLI send to a read-only topic: %v", err)
	}

	out, _, err := run(t, "topic", "perm", "-n", g.NSAddr, "-t", "cli-perm", "--perm", "6")
	if err != nil || !strings.Contains(out, "now has perm 6") {
		t.Fatalf("perm 6: %q, %v", out, err)
	}
	sendCLI(t, g, "cli-perm", "-b", "accepted")

	for _, bad := range []string{"0", "1", "3", "7", "5"} {
		_, _, err := run(t, "topic", "perm", "-n", g.NSAddr, "-t", "cli-perm", "--perm", bad)
		if err == nil || !strings.Contains(err.Error(), "--perm "+bad) {
			t.Errorf("--perm %s: %v", bad, err)
		}
	}
	if _, _, err := run(t, "topic", "perm", "-n", g.NSAddr, "-t", "cli-no-such-topic", "--perm", "6"); err == nil {
		t.Fatal("perm of an unknown topic succeeded")
	}
}

// TestTopicOutputJSON: create, update, route, list and delete print JSON
// documents of the documented shapes with --output json.
func TestTopicOutputJSON(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	g.WaitLeader(10 * time.Second)
	var placed []placementJSON
	g.Eventually(10*time.Second, func() error {
		out, _, err := run(t, "topic", "create", "-n", g.NSAddr, "-t", "cli-json", "-q", "2", "--perm", "6", "-o", "json")
		if err != nil {
			return err
		}
		return json.Unmarshal([]byte(out), &placed)
	})
	if len(placed) != 1 || placed[0].BrokerName != "broker-a" || placed[0].Perm != 6 || placed[0].Topic != "cli-json" {
		t.Fatalf("create printed %+v", placed)
	}
	placed = nil
	runJSON(t, &placed, "topic", "update", "-n", g.NSAddr, "-t", "cli-json", "--add-group", "broker-a")
	if len(placed) != 1 || placed[0].BrokerName != "broker-a" {
		t.Fatalf("update printed %+v", placed)
	}
	var topics []string
	runJSON(t, &topics, "topic", "list", "-n", g.NSAddr)
	found := false
	for _, tp := range topics {
		found = found || tp == "cli-json"
	}
	if !found {
		t.Fatalf("list %v lacks cli-json", topics)
	}
	out, _, err := run(t, "topic", "delete", "-n", g.NSAddr, "-t", "cli-json", "-o", "json")
	placed = nil
	if err != nil || json.Unmarshal([]byte(out), &placed) != nil || len(placed) != 1 || placed[0].BrokerName != "broker-a" {
		t.Fatalf("delete printed %q, %v", out, err)
	}
	if strings.Contains(out, "name servers") {
		t.Fatalf("delete JSON has the table's name server line: %q", out)
	}
	if _, _, err := run(t, "topic", "route", "-n", g.NSAddr, "-t", "cli-json", "-o", "json"); err == nil {
		t.Fatal("route of a deleted topic succeeded")
	}
}
