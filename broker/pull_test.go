package broker_test

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// TestPull covers PULL_MESSAGE's answers on one group: found, the end of
// the queue, moved offsets, tag filtering (request and heartbeat
// subscriptions), validation, and pulls served by a follower.
func TestPull(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	const topic = "PullTopic"
	createTopic(t, g, topic, 2)
	tags := []string{"A", "B", "A", "B", "A"}
	for i, tag := range tags {
		if off := send(t, g, leader, topic, 0, tag, "body-"+strconv.Itoa(i)); off != int64(i) {
			t.Fatalf("message %d got queue offset %d", i, off)
		}
	}

	t.Run("found", func(t *testing.T) {
		resp := g.Invoke(leader, pullReq(pullArgs{topic: topic, offset: 0}))
		msgs := expectPull(t, resp, remoting.ResSuccess, 5)
		if len(msgs) != 5 || extInt(t, resp, "maxOffset") != 5 || extInt(t, resp, "minOffset") != 0 {
			t.Fatalf("got %d messages, ext %v", len(msgs), resp.ExtFields)
		}
		var again []byte
		for i, m := range msgs {
			if m.QueueOffset != int64(i) || string(m.Body) != "body-"+strconv.Itoa(i) || m.Properties[message.PropertyTags] != tags[i] || m.Topic != topic {
				t.Fatalf("message %d: offset %d body %q tags %q topic %q", i, m.QueueOffset, m.Body, m.Properties[message.PropertyTags], m.Topic)
			}
			var err error
			if again, err = message.AppendExt(again, m); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(again, resp.Body) {
			t.Fatal("pulled records are not the stored layout byte for byte")
		}
		part := g.Invoke(leader, pullReq(pullArgs{topic: topic, offset: 2, max: 2}))
		msgs = expectPull(t, part, remoting.ResSuccess, 4)
		if len(msgs) != 2 || msgs[0].QueueOffset != 2 || msgs[1].QueueOffset != 3 {
			t.Fatalf("partial pull got %d messages", len(msgs))
		}
	})

	t.Run("not found and moved", func(t *testing.T) {
		cases := []struct {
			name   string
			queue  int
			offset int64
			code   int16
			next   int64
		}{
			{"at max", 0, 5, remoting.ResPullNotFound, 5},
			{"beyond max, min 0", 0, 9, remoting.ResPullOffsetMoved, 0},
			{"below min", 0, -3, remoting.ResPullOffsetMoved, 0},
			{"empty queue at 0", 1, 0, remoting.ResPullNotFound, 0},
			{"empty queue elsewhere", 1, 7, remoting.ResPullOffsetMoved, 0},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				resp := g.Invoke(leader, pullReq(pullArgs{topic: topic, queueID: c.queue, offset: c.offset}))
				expectPull(t, resp, c.code, c.next)
			})
		}
	})

	t.Run("tag filter", func(t *testing.T) {
		resp := g.Invoke(leader, pullReq(pullArgs{topic: topic, sysFlag: 4, sub: "A"}))
		msgs := expectPull(t, resp, remoting.ResSuccess, 5)
		if len(msgs) != 3 {
			t.Fatalf("filter A got %d messages, want 3", len(msgs))
		}
		for _, m := range msgs {
			if m.Properties[message.PropertyTags] != "A" {
				t.Fatalf("filter A delivered tag %q", m.Properties[message.PropertyTags])
			}
		}
		both := g.Invoke(leader, pullReq(pullArgs{topic: topic, sysFlag: 4, sub: "A || B"}))
		if msgs := expectPull(t, both, remoting.ResSuccess, 5); len(msgs) != 5 {
			t.Fatalf("filter A || B got %d messages", len(msgs))
		}
		none := g.Invoke(leader, pullReq(pullArgs{topic: topic, offset: 1, sysFlag: 4, sub: "C"}))
		expectPull(t, none, remoting.ResPullRetryImmediately, 5)
	})

	t.Run("heartbeat subscription", func(t *testing.T) {
		hb := remoting.NewRequest(remoting.ReqHeartBeat, nil, heartbeatBody("10.0.0.9@1", "cgB", topic, "B"))
		if resp := g.Invoke(leader, hb); resp.Code != remoting.ResSuccess {
			t.Fatalf("heartbeat: %d %s", resp.Code, resp.Remark)
		}
		resp := g.Invoke(leader, pullReq(pullArgs{group: "cgB", topic: topic, sysFlag: 2}))
		msgs := expectPull(t, resp, remoting.ResSuccess, 5)
		if len(msgs) != 2 || msgs[0].Properties[message.PropertyTags] != "B" || msgs[1].QueueOffset != 3 {
			t.Fatalf("heartbeat filter B got %d messages", len(msgs))
		}
	})

	t.Run("validation", func(t *testing.T) {
		cases := []struct {
			name string
			req  *remoting.Command
			code int16
		}{
			{"unknown topic", pullReq(pullArgs{topic: "NoSuchTopic"}), remoting.ResTopicNotExist},
			{"queue out of range", pullReq(pullArgs{topic: topic, queueID: 2}), remoting.ResSystemError},
			{"negative queue", pullReq(pullArgs{topic: topic, queueID: -1}), remoting.ResSystemError},
			{"missing offset", func() *remoting.Command {
				r := pullReq(pullArgs{topic: topic})
				delete(r.ExtFields, "queueOffset")
				return r
			}(), remoting.ResSystemError},
			{"bad number", func() *remoting.Command {
				r := pullReq(pullArgs{topic: topic})
				r.ExtFields["maxMsgNums"] = "lots"
				return r
			}(), remoting.ResSystemError},
			{"bad SQL92 subscription", func() *remoting.Command {
				r := pullReq(pullArgs{topic: topic, sysFlag: 4, sub: "a > "})
				r.ExtFields["expressionType"] = "SQL92"
				return r
			}(), remoting.ResSubscriptionParseFailed},
			{"unknown expression type", func() *remoting.Command {
				r := pullReq(pullArgs{topic: topic, sysFlag: 4, sub: "a"})
				r.ExtFields["expressionType"] = "JSONPATH"
				return r
			}(), remoting.ResSubscriptionParseFailed},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				resp := g.Invoke(leader, c.req)
				if resp.Code != c.code || resp.Remark == "" {
					t.Fatalf("answered %d %q, want %d with a remark", resp.Code, resp.Remark, c.code)
				}
			})
		}
	})

	t.Run("follower serves pulls", func(t *testing.T) {
		want := g.Invoke(leader, pullReq(pullArgs{topic: topic}))
		f := follower(g, leader)
		g.Eventually(5*time.Second, func() error {
			resp := g.Invoke(f, pullReq(pullArgs{topic: topic}))
			if resp.Code != remoting.ResSuccess || resp.ExtFields["nextBeginOffset"] != "5" {
				return fmt.Errorf("follower answered %d next %s", resp.Code, resp.ExtFields["nextBeginOffset"])
			}
			if !bytes.Equal(resp.Body, want.Body) {
				return fmt.Errorf("follower's records differ from the leader's")
			}
			return nil
		})
	})
}

// TestPullProposedRecords pulls records proposed directly through the
// leader's node, bypassing SEND_MESSAGE.
func TestPullProposedRecords(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	leader := g.WaitLeader(5 * time.Second)
	const topic = "ProposedTopic"
	createTopic(t, g, topic, 1)
	var cmd dledger.PutMessagesCommand
	for i := 0; i < 3; i++ {
		m := &message.MessageExt{Message: message.Message{Topic: topic, Body: []byte{byte(i)}, Properties: map[string]string{message.PropertyTags: "T"}}}
		rec, err := message.AppendExt(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Messages = append(cmd.Messages, dledger.Message{Topic: topic, TagsCode: message.TagsHashCode("T"), Record: rec})
	}
	res, err := g.Broker(leader).Node().Propose(t.Context(), &cmd)
	if err != nil {
		t.Fatal(err)
	}
	resp := g.Invoke(leader, pullReq(pullArgs{topic: topic, sysFlag: 4, sub: "T"}))
	msgs := expectPull(t, resp, remoting.ResSuccess, 3)
	for i, m := range msgs {
		if m.Body[0] != byte(i) || m.CommitLogOffset != res.Messages[i].CommitOffset || m.StoreTimestamp != res.Messages[i].StoreTimestamp {
			t.Fatalf("message %d: body %v commit offset %d (want %d)", i, m.Body, m.CommitLogOffset, res.Messages[i].CommitOffset)
		}
	}
}
