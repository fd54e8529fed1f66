package client

import (
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// TestConsumerRunningInfoThroughBroker: GET_CONSUMER_RUNNING_INFO sent to
// a broker is relayed to the SDK's push consumer, which answers its
// properties, subscriptions, per-queue process state and rates in the
// fastjson shape the Java admin parses.
func TestConsumerRunningInfoThroughBroker(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	createTopic(t, g, "ri", 2)
	p := startProducer(t, g)
	sent := sendN(t, p, "ri", "m", 10, nil)
	c := newCollector()
	pc := startPush(t, g, "cg-ri", "one", "ri", "*", c.handler, WithConsumeFrom(ConsumeFromFirst()), WithConsumeGoroutines(3))
	c.waitDistinct(t, len(sent), 20*time.Second)
	var info protocol.ConsumerRunningInfo
	waitFor(t, 10*time.Second, "running info relayed", func() bool {
		r := g.Invoke(g.WaitLeader(10*time.Second), remoting.NewRequest(remoting.ReqGetConsumerRunningInfo,
			map[string]string{"consumerGroup": "cg-ri", "clientId": pc.ClientID(), "jstackEnable": "false"}, nil))
		if r.Code != remoting.ResSuccess {
			t.Logf("running info: %d %s", r.Code, r.Remark)
			return false
		}
		info = protocol.ConsumerRunningInfo{}
		if err := protocol.UnmarshalFastJSON(r.Body, &info); err != nil {
			t.Fatalf("body %s: %v", r.Body, err)
		}
		return true
	})
	props := info.Properties
	if props[protocol.PropConsumeType] != protocol.ConsumePassively || props[protocol.PropConsumeOrderly] != "false" ||
		props[protocol.PropThreadPoolCoreSize] != "3" || props["consumerGroup"] != "cg-ri" || props[protocol.PropNamesrvAddr] != g.NSAddr {
		t.Errorf("properties %v", props)
	}
	topics := map[string]bool{}
	for _, s := range info.SubscriptionSet {
		topics[s.Topic] = true
	}
	if !topics["ri"] || !topics[protocol.RetryTopic("cg-ri")] {
		t.Errorf("subscriptions %+v", info.SubscriptionSet)
	}
	var next int64
	riQueues := 0
	for mq, in := range info.MQTable {
		if mq.Topic != "ri" {
			continue
		}
		riQueues++
		next += in.CommitOffset
		if in.Droped || in.LastPullTimestamp == 0 || in.CachedMsgCount != 0 {
			t.Errorf("queue %v: %+v", mq, in)
		}
	}
	if riQueues != 2 || next != 10 {
		t.Errorf("mqTable: %d queues of ri, commit offsets sum %d: %+v", riQueues, next, info.MQTable)
	}
	st, ok := info.StatusTable["ri"]
	if !ok || st.ConsumeOKTPS <= 0 || st.PullTPS <= 0 || st.ConsumeFailedMsgs != 0 {
		t.Errorf("status of ri: %+v (ok %v)", st, ok)
	}
}
