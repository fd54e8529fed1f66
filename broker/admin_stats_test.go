package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// TestAdminStatsConnectionsAndReset drives the statistics, connection,
// running-info and reset codes against a real group, with a fake
// consumer client that heartbeats and answers what the broker relays.
func TestAdminStatsConnectionsAndReset(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	createTopic(t, g, "Stats", 2)
	for i := 0; i < 3; i++ {
		send(t, g, leader, "Stats", 0, "a", "m")
	}
	send(t, g, leader, "Stats", 1, "a", "m")

	cl, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	resets := make(chan *remoting.Command, 4)
	cl.HandleFunc(remoting.ReqResetConsumerClientOffset, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		resets <- req
		return nil
	})
	cl.HandleFunc(remoting.ReqGetConsumerRunningInfo, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
		resp.Body = []byte(`{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"mqTable":{{"topic":"Stats","brokerName":"b","queueId":0}:{"commitOffset":1}},"jstack":""}`)
		return resp
	})
	mustSucceed(t, invokeOn(t, g, cl, leader, remoting.NewRequest(remoting.ReqHeartBeat, nil, heartbeatBody("c1", "G", "Stats", "*"))), "heartbeat")
	mustSucceed(t, invokeOn(t, g, cl, leader, updateOffsetReq("G", "Stats", 0, 1)), "commit offset")

	// 202: per queue min/max and the last store time.
	var ts protocol.TopicStatsTable
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqGetTopicStatsInfo, map[string]string{"topic": "Stats"}, nil)), &ts)
	q0 := protocol.MessageQueue{Topic: "Stats", BrokerName: g.Config(leader).BrokerName, QueueID: 0}
	q1 := q0
	q1.QueueID = 1
	if o := ts.OffsetTable[q0]; o.MaxOffset != 3 || o.MinOffset != 0 || o.LastUpdateTimestamp <= 0 || ts.OffsetTable[q1].MaxOffset != 1 {
		t.Fatalf("topic stats %+v", ts.OffsetTable)
	}
	if r := g.Invoke(leader, remoting.NewRequest(remoting.ReqGetTopicStatsInfo, map[string]string{"topic": "Nope"}, nil)); r.Code != remoting.ResTopicNotExist {
		t.Fatalf("stats of an unknown topic: %d %s", r.Code, r.Remark)
	}

	// 208 and 317: the group's lag.
	var cs protocol.ConsumeStats
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqGetConsumeStats, map[string]string{"consumerGroup": "G", "topic": "Stats"}, nil)), &cs)
	if w := cs.OffsetTable[q0]; w.BrokerOffset != 3 || w.ConsumerOffset != 1 || w.LastTimestamp <= 0 || cs.Diff() != 3 {
		t.Fatalf("consume stats %+v diff %d", cs.OffsetTable, cs.Diff())
	}
	var all protocol.ConsumeStatsList
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqGetBrokerConsumeStats, map[string]string{"isOrder": "false"}, nil)), &all)
	if all.TotalDiff != 3 || all.BrokerAddr != g.Addr(leader) {
		t.Fatalf("broker consume stats %+v", all)
	}

	// 203, 204, 300.
	var cc protocol.ConsumerConnection
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqGetConsumerConnectionList, map[string]string{"consumerGroup": "G"}, nil)), &cc)
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].ClientID != "c1" || cc.ConnectionSet[0].ClientAddr == "" ||
		cc.ConnectionSet[0].Language != remoting.LanguageGo || cc.SubscriptionTable["Stats"].SubString != "*" || cc.MessageModel != "CLUSTERING" {
		t.Fatalf("consumer connection %+v", cc)
	}
	if r := g.Invoke(leader, remoting.NewRequest(remoting.ReqGetConsumerConnectionList, map[string]string{"consumerGroup": "none"}, nil)); r.Code != remoting.ResConsumerNotOnline {
		t.Fatalf("connections of an absent group: %d %s", r.Code, r.Remark)
	}
	var pc protocol.ProducerConnection
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqGetProducerConnectionList, map[string]string{"producerGroup": "CLIENT_INNER_PRODUCER"}, nil)), &pc)
	if len(pc.ConnectionSet) != 1 || pc.ConnectionSet[0].ClientID != "c1" {
		t.Fatalf("producer connection %+v", pc)
	}
	var who protocol.GroupList
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqQueryTopicConsumeByWho, map[string]string{"topic": "Stats"}, nil)), &who)
	if !slices.Contains(who.GroupList, "G") {
		t.Fatalf("consumed by %v", who.GroupList)
	}

	// 315: the puts counted.
	var sd protocol.BrokerStatsData
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqViewBrokerStatsData, map[string]string{"statsName": protocol.StatsTopicPutNums, "statsKey": "Stats"}, nil)), &sd)
	if sd.StatsMinute.Sum != 4 || sd.StatsDay.Sum != 4 {
		t.Fatalf("put stats %+v", sd)
	}

	// 307: relayed to the client and its answer returned.
	var info protocol.ConsumerRunningInfo
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqGetConsumerRunningInfo, map[string]string{"consumerGroup": "G", "clientId": "c1"}, nil)), &info)
	if info.Properties[protocol.PropConsumeType] != "CONSUME_PASSIVELY" || info.MQTable[protocol.MessageQueue{Topic: "Stats", BrokerName: "b"}].CommitOffset != 1 {
		t.Fatalf("running info %+v", info)
	}

	// 222 through a follower: committed, the client told, the table answered.
	fol := follower(g, leader)
	var rb protocol.ResetOffsetBody
	fastBody(t, g.Invoke(fol, remoting.NewRequest(remoting.ReqInvokeBrokerToResetOffset,
		map[string]string{"topic": "Stats", "group": "G", "timestamp": "-1", "isForce": "true"}, nil)), &rb)
	if rb.OffsetTable[q0] != 3 || rb.OffsetTable[q1] != 1 {
		t.Fatalf("reset table %+v", rb.OffsetTable)
	}
	select {
	case req := <-resets:
		var body protocol.ResetOffsetBody
		if err := protocol.UnmarshalFastJSON(req.Body, &body); err != nil || body.OffsetTable[q0] != 3 || req.ExtFields["group"] != "G" {
			t.Fatalf("reset sent to the client: %s %v %v", req.Body, req.ExtFields, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the consumer was not told of the reset")
	}
	for i := 0; i < g.Len(); i++ {
		expectOffset(t, g, i, "G", "Stats", 0, 3)
	}
	// To a time before the first message: the first offset.
	fastBody(t, g.Invoke(leader, remoting.NewRequest(remoting.ReqInvokeBrokerToResetOffset,
		map[string]string{"topic": "Stats", "group": "G", "timestamp": "1", "isForce": "true"}, nil)), &rb)
	if rb.OffsetTable[q0] != 0 {
		t.Fatalf("reset to an early time %+v", rb.OffsetTable)
	}
}

func fastBody(t *testing.T, resp *remoting.Command, v any) {
	t.Helper()
	mustSucceed(t, resp, remoting.CodeName(resp.Code))
	if err := protocol.UnmarshalFastJSON(resp.Body, v); err != nil {
		t.Fatalf("body %s: %v", resp.Body, err)
	}
	if _, err := json.Marshal(v); err != nil {
		t.Fatalf("re-encoding %T: %v", v, err)
	}
}

// TestAdminAllOffsetsAndTimeSpan: GET_ALL_CONSUMER_OFFSET answers every
// committed offset under "topic@group" and queue id, and
// QUERY_CONSUME_TIME_SPAN per queue the store times of its first and last
// message, of the group's progress, and how long the oldest unconsumed
// message has waited.
func TestAdminAllOffsetsAndTimeSpan(t *testing.T) {
	g, leader := startGroup(t, brokertest.Options{})
	createTopic(t, g, "Span", 2)
	before := time.Now().UnixMilli()
	for range 3 {
		send(t, g, leader, "Span", 0, "a", "m")
	}
	after := time.Now().UnixMilli()
	mustSucceed(t, g.Invoke(leader, updateOffsetReq("span-g", "Span", 0, 1)), "commit")

	var all protocol.ConsumerOffsetWrapper
	g.Eventually(5*time.Second, func() error {
		r := g.Invoke(leader, remoting.NewRequest(remoting.ReqGetAllConsumerOffset, nil, nil))
		if r.Code != remoting.ResSuccess {
			return fmt.Errorf("%d %s", r.Code, r.Remark)
		}
		all = protocol.ConsumerOffsetWrapper{}
		if err := protocol.UnmarshalFastJSON(r.Body, &all); err != nil {
			return err
		}
		if all.OffsetTable["Span@span-g"][0] != 1 {
			return fmt.Errorf("offset table %v", all.OffsetTable)
		}
		return nil
	})

	r := g.Invoke(leader, remoting.NewRequest(remoting.ReqQueryConsumeTimeSpan, map[string]string{"topic": "Span", "group": "span-g"}, nil))
	if r.Code != remoting.ResSuccess {
		t.Fatalf("time span: %d %s", r.Code, r.Remark)
	}
	var body protocol.QueryConsumeTimeSpanBody
	if err := protocol.UnmarshalFastJSON(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.ConsumeTimeSpanSet) != 2 {
		t.Fatalf("spans %+v", body.ConsumeTimeSpanSet)
	}
	for _, s := range body.ConsumeTimeSpanSet {
		if s.MessageQueue.Topic != "Span" || s.MessageQueue.BrokerName != "broker-a" {
			t.Errorf("span queue %+v", s.MessageQueue)
		}
		if s.MessageQueue.QueueID != 0 {
			if s.MaxTimeStamp != 0 || s.DelayTime != 0 {
				t.Errorf("empty queue span %+v", s)
			}
			continue
		}
		if s.MinTimeStamp < before || s.MaxTimeStamp > after || s.MinTimeStamp > s.MaxTimeStamp ||
			s.ConsumeTimeStamp < s.MinTimeStamp || s.ConsumeTimeStamp > s.MaxTimeStamp || s.DelayTime < 0 {
			t.Errorf("queue 0 span %+v (sent between %d and %d)", s, before, after)
		}
	}
	r = g.Invoke(leader, remoting.NewRequest(remoting.ReqQueryConsumeTimeSpan, map[string]string{"topic": "NoSuchTopic", "group": "span-g"}, nil))
	if r.Code != remoting.ResTopicNotExist {
		t.Fatalf("unknown topic: %d %s", r.Code, r.Remark)
	}
}
