package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

const txnGroup = "txpg"

// txnGroupCfg shortens the check-back for tests.
func txnGroupCfg(timeout, interval time.Duration, max int) brokertest.Options {
	return brokertest.Options{Configure: func(_ int, c *broker.Config) {
		c.TransactionTimeout, c.TransactionCheckInterval, c.TransactionCheckMax = timeout, interval, max
	}}
}

// halfAnswer is what a half send answered: enough to end it.
type halfAnswer struct {
	key         string
	queueOffset int64
	commitLog   int64
	queueID     int
}

// sendHalf sends a transaction half message of txnGroup to node i.
func sendHalf(t *testing.T, g *brokertest.Group, i int, topic string, queueID int, body string, extra map[string]string) halfAnswer {
	t.Helper()
	key := fmt.Sprintf("tx-%s-%s", topic, body)
	props := map[string]string{message.PropertyUniqKey: key, message.PropertyTags: "tx", message.PropertyKeys: "biz-" + body,
		message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: txnGroup}
	for k, v := range extra {
		props[k] = v
	}
	req := sendMsgReq(topic, queueID, props, []byte(body))
	req.ExtFields["sysFlag"] = strconv.Itoa(int(message.SysFlagTransactionPrepared))
	req.ExtFields["producerGroup"] = txnGroup
	resp := g.Invoke(i, req)
	mustSucceed(t, resp, "half send")
	if resp.ExtFields["transactionId"] != key {
		t.Fatalf("half answer transactionId %q, want the UNIQ_KEY %q", resp.ExtFields["transactionId"], key)
	}
	_, co, err := message.DecodeOffsetMsgID(resp.ExtFields["msgId"])
	if err != nil {
		t.Fatal(err)
	}
	return halfAnswer{key: key, queueOffset: extInt(t, resp, "queueOffset"), commitLog: co, queueID: int(extInt(t, resp, "queueId"))}
}

func endReq(h halfAnswer, group string, decision int32, fromCheck bool) *remoting.Command {
	e := protocol.EndTransactionHeader{ProducerGroup: group, TranStateTableOffset: h.queueOffset, CommitLogOffset: h.commitLog,
		CommitOrRollback: decision, FromTransactionCheck: fromCheck, MsgID: h.key, TransactionID: h.key}
	return remoting.NewRequest(remoting.ReqEndTransaction, e.Ext(), nil)
}

// TestTransactionCommitRollback: a half is invisible; commit delivers it
// once with its properties, rollback never; repeats are answered
// SUCCESS, contradictions and bad headers SYSTEM_ERROR, and every node
// holds the same outcome.
func TestTransactionCommitRollback(t *testing.T) {
	g, leader := startGroup(t, txnGroupCfg(time.Hour, time.Hour, 15))
	createTopicAt(t, g, leader, "orders", 2, 6)
	f := followerOf(g, leader)
	a := sendHalf(t, g, f, "orders", 1, "a", nil) // through a follower: forwarded
	b := sendHalf(t, g, leader, "orders", 1, "b", nil)
	if n := maxOffsetOf(t, g, leader, "orders", 1); n != 0 {
		t.Fatalf("half messages visible: orders/1 holds %d", n)
	}
	mustSucceed(t, g.Invoke(f, endReq(a, txnGroup, protocol.TransactionCommitType, false)), "commit a via a follower")
	mustSucceed(t, g.Invoke(leader, endReq(b, txnGroup, protocol.TransactionRollbackType, false)), "rollback b")
	mustSucceed(t, g.Invoke(leader, endReq(a, txnGroup, protocol.TransactionCommitType, false)), "repeated commit")
	mustSucceed(t, g.Invoke(leader, endReq(b, txnGroup, protocol.TransactionNotType, false)), "unknown")
	for _, c := range []struct {
		req  *remoting.Command
		want string
	}{
		{endReq(b, txnGroup, protocol.TransactionCommitType, false), "already rolled back"},
		{endReq(a, "other", protocol.TransactionRollbackType, false), "producer group wrong"},
		{endReq(halfAnswer{key: a.key, queueOffset: a.queueOffset, commitLog: a.commitLog + 1}, txnGroup, protocol.TransactionCommitType, false), "Find prepared"},
		{endReq(halfAnswer{key: "nope", queueOffset: a.queueOffset, commitLog: a.commitLog}, txnGroup, protocol.TransactionRollbackType, false), "transaction id"},
		{endReq(a, txnGroup, 5, false), "commitOrRollback"},
		{remoting.NewRequest(remoting.ReqEndTransaction, map[string]string{"producerGroup": txnGroup}, nil), "custom field"},
	} {
		resp := g.Invoke(leader, c.req)
		if resp.Code != remoting.ResSystemError || !strings.Contains(resp.Remark, c.want) {
			t.Errorf("%v: answered %d %q, want SYSTEM_ERROR with %q", c.req.ExtFields, resp.Code, resp.Remark, c.want)
		}
	}
	for i := 0; i < g.Len(); i++ {
		g.Eventually(5*time.Second, func() error {
			if n := len(pullAll(t, g, i, "orders", 1)); n != 1 {
				return fmt.Errorf("node %d: orders/1 holds %d messages, want 1", i, n)
			}
			return nil
		})
		m := pullAll(t, g, i, "orders", 1)[0]
		if m.UniqKey() != a.key || string(m.Body) != "a" || m.Tags() != "tx" || m.Property(message.PropertyKeys) != "biz-a" ||
			message.TransactionValue(m.SysFlag) != message.SysFlagTransactionCommit || m.Property(message.PropertyTransactionPrepared) != "" ||
			m.Property(message.PropertyRealTopic) != "" || m.QueueID != 1 || m.PreparedTransactionOffset != a.commitLog {
			t.Fatalf("node %d: committed message %+v", i, m)
		}
		g.Eventually(5*time.Second, func() error { // the rollback's entry may still be on its way
			if ops := pullAllOp(t, g, i); len(ops) != 2 || ops[0] != a.queueOffset || ops[1] != b.queueOffset {
				return fmt.Errorf("node %d: op records %v, want [%d %d]", i, ops, a.queueOffset, b.queueOffset)
			}
			return nil
		})
	}
}

// pullAllOp reads the op records of node i by its store (the op topic has
// no topic config, as in RocketMQ, so it cannot be pulled).
func pullAllOp(t *testing.T, g *brokertest.Group, i int) []int64 {
	t.Helper()
	st := g.Broker(i).Store()
	var out []int64
	entries, _, err := st.ReadEntries(protocol.TransOpHalfTopic, 0, 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		rec, err := st.ReadMessage(e.CommitOffset, int(e.Size))
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := message.DecodeExt(rec)
		if err != nil || m.Tags() != "d" {
			t.Fatalf("op record %+v: %v", m, err)
		}
		off, _ := strconv.ParseInt(string(m.Body), 10, 64)
		out = append(out, off)
	}
	return out
}

// fakeTxnProducer is a producer of txnGroup connected to every node: it
// records the check-backs it receives and answers them with decide.
type fakeTxnProducer struct {
	cl     *remoting.Client
	mu     sync.Mutex
	checks []protocol.CheckTransactionStateHeader
	bodies []*message.MessageExt
	decide func(h protocol.CheckTransactionStateHeader, m *message.MessageExt) int32 // -1: no answer
}

func newFakeTxnProducer(t *testing.T, g *brokertest.Group, decide func(protocol.CheckTransactionStateHeader, *message.MessageExt) int32) *fakeTxnProducer {
	cl, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	p := &fakeTxnProducer{cl: cl, decide: decide}
	cl.HandleFunc(remoting.ReqCheckTransactionState, func(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
		h, err := protocol.DecodeCheckTransactionStateHeader(req.ExtFields)
		msgs, derr := message.DecodeExts(req.Body)
		if err != nil || derr != nil || len(msgs) != 1 {
			t.Errorf("check-back: header %v (%v), body %v", req.ExtFields, err, derr)
			return nil
		}
		p.mu.Lock()
		p.checks, p.bodies = append(p.checks, h), append(p.bodies, msgs[0])
		p.mu.Unlock()
		if d := p.decide(h, msgs[0]); d >= 0 {
			e := protocol.EndTransactionHeader{ProducerGroup: txnGroup, TranStateTableOffset: h.TranStateTableOffset,
				CommitLogOffset: h.CommitLogOffset, CommitOrRollback: d, FromTransactionCheck: true, MsgID: h.MsgID, TransactionID: h.TransactionID}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, _ = cl.Invoke(ctx, c.RemoteAddr().String(), remoting.NewRequest(remoting.ReqEndTransaction, e.Ext(), nil))
			}()
		}
		return nil
	})
	body, _ := json.Marshal(protocol.HeartbeatData{ClientID: "fake-txn@1", ProducerDataSet: []protocol.ProducerData{{GroupName: txnGroup}}})
	for i := 0; i < g.Len(); i++ {
		mustSucceed(t, invokeOn(t, g, cl, i, remoting.NewRequest(remoting.ReqHeartBeat, nil, body)), "producer heartbeat")
	}
	return p
}

func (p *fakeTxnProducer) checksOf(halfOffset int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, h := range p.checks {
		if h.TranStateTableOffset == halfOffset {
			n++
		}
	}
	return n
}

// TestTransactionCheckBack: an undecided half is checked back after the
// timeout with its real topic and offsets, the producer's answer decides
// it (commit delivered once, rollback never), and a half nobody answers is
// discarded to TRANS_CHECK_MAX_TIME_TOPIC after the maximum.
func TestTransactionCheckBack(t *testing.T) {
	g, leader := startGroup(t, txnGroupCfg(300*time.Millisecond, 200*time.Millisecond, 3))
	createTopicAt(t, g, leader, "pay", 1, 6)
	p := newFakeTxnProducer(t, g, func(_ protocol.CheckTransactionStateHeader, m *message.MessageExt) int32 {
		switch string(m.Body) {
		case "commit-me":
			return protocol.TransactionCommitType
		case "roll-me":
			return protocol.TransactionRollbackType
		}
		return -1
	})
	c := sendHalf(t, g, leader, "pay", 0, "commit-me", nil)
	r := sendHalf(t, g, leader, "pay", 0, "roll-me", nil)
	s := sendHalf(t, g, leader, "pay", 0, "silent", nil)
	g.Eventually(15*time.Second, func() error {
		if n := p.checksOf(s.queueOffset); n < 3 {
			return fmt.Errorf("silent half checked back %d times", n)
		}
		if _, decided := g.Broker(leader).Metadata().TxnDecided(s.queueOffset); !decided {
			return fmt.Errorf("silent half not discarded yet")
		}
		return nil
	})
	if n := p.checksOf(s.queueOffset); n != 3 {
		t.Errorf("silent half checked back %d times, want exactly 3", n)
	}
	if n := p.checksOf(c.queueOffset); n != 1 {
		t.Errorf("answered half checked back %d times, want 1", n)
	}
	p.mu.Lock()
	for i, h := range p.checks {
		m := p.bodies[i]
		if m.Topic != "pay" || m.QueueID != 0 || h.MsgID != m.UniqKey() || h.CommitLogOffset != m.CommitLogOffset || h.OffsetMsgID != m.MsgID() {
			t.Errorf("check-back %+v carries %s/%d %s", h, m.Topic, m.QueueID, m.UniqKey())
		}
	}
	p.mu.Unlock()
	for i := 0; i < g.Len(); i++ {
		g.Eventually(5*time.Second, func() error { // followers apply the last decisions a moment later
			if got := pullAll(t, g, i, "pay", 0); len(got) != 1 || string(got[0].Body) != "commit-me" {
				return fmt.Errorf("node %d delivered %d messages", i, len(got))
			}
			aside, _, err := g.Broker(i).Store().ReadEntries(protocol.TransCheckMaxTimeTopic, 0, 0, 10, nil)
			if err != nil || len(aside) != 1 {
				return fmt.Errorf("node %d: %d messages discarded aside (%v), want 1", i, len(aside), err)
			}
			for _, h := range []halfAnswer{c, r, s} {
				if _, decided := g.Broker(i).Metadata().TxnDecided(h.queueOffset); !decided {
					return fmt.Errorf("node %d: half %d undecided", i, h.queueOffset)
				}
			}
			return nil
		})
	}
}

// TestTransactionCheckBackAcrossFailover: check-back counts are
// replicated, so a new leader continues them; a half decided before the
// failover is never checked again, and a commit's message is delivered
// exactly once.
func TestTransactionCheckBackAcrossFailover(t *testing.T) {
	g, leader := startGroup(t, txnGroupCfg(200*time.Millisecond, 500*time.Millisecond, 4))
	createTopicAt(t, g, leader, "fo", 1, 6)
	p := newFakeTxnProducer(t, g, func(protocol.CheckTransactionStateHeader, *message.MessageExt) int32 { return -1 })
	done := sendHalf(t, g, leader, "fo", 0, "done", nil)
	mustSucceed(t, g.Invoke(leader, endReq(done, txnGroup, protocol.TransactionCommitType, false)), "commit")
	open := sendHalf(t, g, leader, "fo", 0, "open", nil)
	g.Eventually(10*time.Second, func() error {
		if n := p.checksOf(open.queueOffset); n < 2 {
			return fmt.Errorf("%d check-backs so far", n)
		}
		return nil
	})
	g.StopNode(leader)
	nl := g.WaitLeader(10 * time.Second)
	g.Eventually(15*time.Second, func() error {
		if _, decided := g.Broker(nl).Metadata().TxnDecided(open.queueOffset); !decided {
			return fmt.Errorf("open half not discarded (%d check-backs)", p.checksOf(open.queueOffset))
		}
		return nil
	})
	// The old leader's checks and the new leader's add up to the maximum:
	// the count survived the failover (a fresh count would make it 4+).
	if n := p.checksOf(open.queueOffset); n != 4 {
		t.Errorf("open half checked back %d times in all, want 4", n)
	}
	if n := p.checksOf(done.queueOffset); n != 0 {
		t.Errorf("committed half checked back %d times", n)
	}
	g.StartNode(leader)
	for i := 0; i < g.Len(); i++ {
		g.Eventually(10*time.Second, func() error {
			if got := pullAll(t, g, i, "fo", 0); len(got) != 1 || string(got[0].Body) != "done" {
				return fmt.Errorf("node %d delivered %d messages", i, len(got))
			}
			return nil
		})
	}
}
