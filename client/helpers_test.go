package client

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// testLogger writes the client's logs to t.Log.
func testLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "client", Level: hclog.Warn, Output: logWriter{t}})
}

type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// startProducer starts a producer on g's name server and closes it at the
// end of the test.
func startProducer(t testing.TB, g *brokertest.Group, opts ...ProducerOpt) *Producer {
	t.Helper()
	opts = append([]ProducerOpt{WithNameServers(g.NSAddr), WithLogger(testLogger(t))}, opts...)
	p, err := NewProducer("pg-test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("close producer: %v", err)
		}
	})
	return p
}

// createTopic creates topic with n queues on g's leader and waits for its
// route.
func createTopic(t testing.TB, g *brokertest.Group, topic string, n int) {
	t.Helper()
	q := strconv.Itoa(n)
	ext := map[string]string{"topic": topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6"}
	resp := g.Invoke(g.WaitLeader(10*time.Second), remoting.NewRequest(remoting.ReqUpdateAndCreateTopic, ext, nil))
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("create topic %s: %d %s", topic, resp.Code, resp.Remark)
	}
	g.Eventually(10*time.Second, func() error {
		r := g.Invoke(g.WaitLeader(10*time.Second), remoting.NewRequest(remoting.ReqGetMaxOffset,
			map[string]string{"topic": topic, "queueId": "0"}, nil))
		if r.Code != remoting.ResSuccess {
			return fmt.Errorf("max offset: %d", r.Code)
		}
		return nil
	})
}

// maxOffset asks node i for a queue's max offset.
func maxOffset(t testing.TB, g *brokertest.Group, i int, topic string, q int32) int64 {
	t.Helper()
	r := g.Invoke(i, remoting.NewRequest(remoting.ReqGetMaxOffset,
		map[string]string{"topic": topic, "queueId": strconv.Itoa(int(q))}, nil))
	if r.Code != remoting.ResSuccess {
		t.Fatalf("max offset %s/%d: %d %s", topic, q, r.Code, r.Remark)
	}
	n, err := strconv.ParseInt(r.ExtFields["offset"], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitMaxOffset waits until node i's queue shows n messages: a send is
// acknowledged once a majority stored it, and the node's queue shows it
// once the node applied it, which may come a little after.
func waitMaxOffset(t testing.TB, g *brokertest.Group, i int, topic string, q int32, n int64) {
	t.Helper()
	g.Eventually(10*time.Second, func() error {
		if got := maxOffset(t, g, i, topic, q); got != n {
			return fmt.Errorf("%s/%d at node %d: max offset %d, want %d", topic, q, i, got, n)
		}
		return nil
	})
}

// pullRaw pulls one queue from offset at node i and decodes the records
// without decompressing, so the stored sysFlag and body are visible.
func pullRaw(t testing.TB, g *brokertest.Group, i int, topic string, q int32, offset int64) []*message.MessageExt {
	t.Helper()
	ext := map[string]string{"consumerGroup": "raw-puller", "topic": topic, "queueId": strconv.Itoa(int(q)),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0",
		"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}
	r := g.Invoke(i, remoting.NewRequest(remoting.ReqPullMessage, ext, nil))
	if r.Code == remoting.ResPullNotFound {
		return nil
	}
	if r.Code != remoting.ResSuccess {
		t.Fatalf("pull %s/%d@%d: %d %s", topic, q, offset, r.Code, r.Remark)
	}
	msgs, err := message.DecodeExts(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// eventually retries cond until it returns nil or d passes.
func eventually(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
