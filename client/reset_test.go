package client

import (
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/remoting"
)

// TestResetOffsetRedeliversToRunningConsumer: INVOKE_BROKER_TO_RESET_OFFSET
// to the first message while a push consumer runs makes it consume every
// message again, and its later commits do not put the old offsets back.
func TestResetOffsetRedeliversToRunningConsumer(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "rs", 2)
	p := startProducer(t, g)
	sent := sendN(t, p, "rs", "m", 20, nil)
	c := newCollector()
	startPush(t, g, "cg-rs", "one", "rs", "*", c.handler, WithConsumeFrom(ConsumeFromFirst()), WithCommitInterval(100*time.Millisecond))
	c.waitDistinct(t, len(sent), 20*time.Second)
	waitFor(t, 10*time.Second, "offsets committed at the end", func() bool {
		return committedOffset(t, g, "cg-rs", "rs", 0)+committedOffset(t, g, "cg-rs", "rs", 1) == 20
	})
	r := g.Invoke(g.WaitLeader(10*time.Second), remoting.NewRequest(remoting.ReqInvokeBrokerToResetOffset,
		map[string]string{"topic": "rs", "group": "cg-rs", "timestamp": "0", "isForce": "true"}, nil))
	if r.Code != remoting.ResSuccess {
		t.Fatalf("reset: %d %s", r.Code, r.Remark)
	}
	waitFor(t, 20*time.Second, "every message delivered twice", func() bool {
		for _, b := range sent {
			if c.bodies()[b] < 2 {
				return false
			}
		}
		return true
	})
	waitFor(t, 10*time.Second, "offsets committed at the end again", func() bool {
		return committedOffset(t, g, "cg-rs", "rs", 0)+committedOffset(t, g, "cg-rs", "rs", 1) == 20
	})
}
