package client

// GET_CONSUMER_RUNNING_INFO (307): an administrator (mqadmin
// consumerStatus, rocketmq-dashboard's consumer detail) asks a broker,
// which relays the request to this consumer; the answer is RocketMQ's
// ConsumerRunningInfo: the consumer's settings as properties, its
// subscriptions, each assigned queue's process-queue state and per-topic
// rates. Rates (statusTable) are over the time since the previous
// running-info request of this consumer (or its start), so a tool polling
// it sees current figures.

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// clientVersionName is PROP_CLIENT_VERSION of this SDK's running info.
var clientVersionName = "raftmq-go (protocol " + strconv.Itoa(int(remoting.ProtocolVersion)) + ")"

// topicCounts are one topic's running counters.
type topicCounts struct {
	pulls, pullMsgs, pullRTms   int64
	consumeOK, consumeFailed    int64
	consumeCalls, consumeRTms   int64
	failedTotal                 int64
	basePulls, baseOK, baseFail int64
}

// consumeStats counts pulls and consumption per topic for running info.
type consumeStats struct {
	mu     sync.Mutex
	topics map[string]*topicCounts
	since  time.Time
	start  time.Time
}

func newConsumeStats() *consumeStats {
	now := time.Now()
	return &consumeStats{topics: map[string]*topicCounts{}, since: now, start: now}
}

func (s *consumeStats) topic(t string) *topicCounts {
	tc := s.topics[t]
	if tc == nil {
		tc = &topicCounts{}
		s.topics[t] = tc
	}
	return tc
}

// pullAnswered counts one pull answer that took rt.
func (s *consumeStats) pullAnswered(topic string, rt time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tc := s.topic(topic)
	tc.pulls++
	tc.pullRTms += rt.Milliseconds()
}

// pulledMsgs counts n messages a pull brought that the subscription keeps.
func (s *consumeStats) pulledMsgs(topic string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.topic(topic).pullMsgs += int64(n)
}

// consumed counts one handler call over n messages that took rt.
func (s *consumeStats) consumed(topic string, n int, ok bool, rt time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tc := s.topic(topic)
	tc.consumeCalls++
	tc.consumeRTms += rt.Milliseconds()
	if ok {
		tc.consumeOK += int64(n)
	} else {
		tc.consumeFailed += int64(n)
		tc.failedTotal += int64(n)
	}
}

// status returns each topic's rates since the last call and starts a new
// interval.
func (s *consumeStats) status() map[string]protocol.ConsumeStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	secs := max(now.Sub(s.since).Seconds(), 0.001)
	s.since = now
	out := map[string]protocol.ConsumeStatus{}
	for t, tc := range s.topics {
		st := protocol.ConsumeStatus{
			PullTPS:           float64(tc.pullMsgs-tc.basePulls) / secs,
			ConsumeOKTPS:      float64(tc.consumeOK-tc.baseOK) / secs,
			ConsumeFailedTPS:  float64(tc.consumeFailed-tc.baseFail) / secs,
			ConsumeFailedMsgs: tc.failedTotal,
		}
		if tc.pulls > 0 {
			st.PullRT = float64(tc.pullRTms) / float64(tc.pulls)
		}
		if tc.consumeCalls > 0 {
			st.ConsumeRT = float64(tc.consumeRTms) / float64(tc.consumeCalls)
		}
		tc.basePulls, tc.baseOK, tc.baseFail = tc.pullMsgs, tc.consumeOK, tc.consumeFailed
		out[t] = st
	}
	return out
}

// onRunningInfo answers GET_CONSUMER_RUNNING_INFO for this member's group.
func (gm *groupMember) onRunningInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if g := req.ExtFields["consumerGroup"]; g != "" && g != gm.cfg.group {
		return remoting.NewResponse(req, remoting.ResSystemError, "this client has no consumer of group "+g)
	}
	body, err := protocol.MarshalFastJSON(gm.runningInfo())
	if err != nil {
		return remoting.NewResponse(req, remoting.ResSystemError, "running info: "+err.Error())
	}
	resp := remoting.NewResponse(req, remoting.ResSuccess, "")
	resp.Body = body
	return resp
}

// runningInfo is the member's ConsumerRunningInfo now.
func (gm *groupMember) runningInfo() protocol.ConsumerRunningInfo {
	gm.mu.Lock()
	info := protocol.ConsumerRunningInfo{Properties: gm.runningProperties(), SubscriptionSet: []protocol.SubscriptionData{},
		MQTable: protocol.MQMap[protocol.ProcessQueueInfo]{}}
	for _, t := range slices.Sorted(maps.Keys(gm.subs)) {
		info.SubscriptionSet = append(info.SubscriptionSet, gm.subs[t].data())
	}
	queues := make([]*queueState, 0, len(gm.queues))
	for _, qs := range gm.queues {
		queues = append(queues, qs)
	}
	gm.mu.Unlock()
	for _, qs := range queues {
		in := qs.pq.info()
		if at := qs.lockedAt.Load(); at != 0 {
			in.Locked, in.LastLockTimestamp = true, at/int64(time.Millisecond)
		}
		info.MQTable[protocol.MessageQueue(qs.mq)] = in
	}
	info.StatusTable = gm.stats.status()
	return info
}

// runningProperties are the consumer's settings under the names RocketMQ's
// running info uses (its PROP_* keys and its consumer's field names).
func (gm *groupMember) runningProperties() map[string]string {
	cfg := gm.cfg
	consumeType := protocol.ConsumePassively
	if gm.active {
		consumeType = protocol.ConsumeActively
	}
	return map[string]string{
		protocol.PropConsumeType:            consumeType,
		protocol.PropConsumeOrderly:         strconv.FormatBool(gm.orderly),
		protocol.PropClientVersion:          clientVersionName,
		protocol.PropConsumerStartTimestamp: strconv.FormatInt(gm.stats.start.UnixMilli(), 10),
		protocol.PropNamesrvAddr:            strings.Join(cfg.nameServers, ";"),
		protocol.PropThreadPoolCoreSize:     strconv.Itoa(gm.workers),
		"consumerGroup":                     cfg.group,
		"messageModel":                      cfg.model.String(),
		"consumeFromWhere":                  cfg.from.String(),
		"pullBatchSize":                     strconv.Itoa(cfg.pullBatch),
		"pullThresholdForQueue":             strconv.Itoa(cfg.maxMsgs),
		"consumeConcurrentlyMaxSpan":        strconv.FormatInt(cfg.maxSpan, 10),
		"unitMode":                          "false",
	}
}
