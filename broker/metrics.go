package broker

import (
	"context"
	"strconv"
	"time"

	gometrics "github.com/armon/go-metrics"

	imetrics "github.com/raftmq/raftmq/internal/metrics"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// Series under RocketMQ 5's metric names (its broker's BrokerMetricsManager
// and its Grafana boards), with raftmq's own beside them. Every series of
// a node carries cluster and node_id.
const (
	mMessagesIn      = "rocketmq_messages_in_total"
	mMessagesOut     = "rocketmq_messages_out_total"
	mThroughputIn    = "rocketmq_throughput_in_total"
	mThroughputOut   = "rocketmq_throughput_out_total"
	mMessageSize     = "rocketmq_message_size"
	mLagMessages     = "rocketmq_consumer_lag_messages"
	mLagLatency      = "rocketmq_consumer_lag_latency"
	mInflight        = "rocketmq_consumer_inflight_messages"
	mSendToDLQ       = "rocketmq_send_to_dlq_messages_total"
	mStorageSize     = "rocketmq_storage_size"
	mDispatchBehind  = "rocketmq_storage_dispatch_behind_bytes"
	mTimingMessages  = "rocketmq_timing_messages"
	mRPCLatency      = "rocketmq_rpc_latency"
	mFsyncLatency    = "raftmq_commitlog_fsync_latency"
	mEntriesPerFsync = "raftmq_commitlog_entries_per_fsync"
)

// metricBuckets are the histogram bounds: message sizes in bytes as
// RocketMQ's, latencies in milliseconds, entries per fsync in entries.
var metricBuckets = map[string][]float64{
	mMessageSize:     {1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20},
	mRPCLatency:      {1, 3, 5, 10, 50, 100, 500, 1000, 3000, 10000},
	mEntriesPerFsync: {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024},
}

// nodeMetrics is this node's series: counted as things happen through
// go-metrics, gauges computed when /metrics is scraped.
type nodeMetrics struct {
	sink *imetrics.Sink
	m    *gometrics.Metrics
	base []gometrics.Label
	// stats feeds VIEW_BROKER_STATS_DATA from the same events.
	stats   *brokerStats
	cluster string
}

func newNodeMetrics(cluster, nodeID string) *nodeMetrics {
	imetrics.Global() // hashicorp/raft's metrics, from the node's first start
	s := imetrics.NewSink(metricBuckets)
	return &nodeMetrics{sink: s, m: imetrics.New(s), stats: newBrokerStats(), cluster: cluster,
		base: []gometrics.Label{{Name: "cluster", Value: cluster}, {Name: "node_id", Value: nodeID}}}
}

// labels is the base labels followed by name/value pairs.
func (nm *nodeMetrics) labels(kv ...string) []gometrics.Label {
	l := make([]gometrics.Label, len(nm.base), len(nm.base)+len(kv)/2)
	copy(l, nm.base)
	for i := 0; i+1 < len(kv); i += 2 {
		l = append(l, gometrics.Label{Name: kv[i], Value: kv[i+1]})
	}
	return l
}

// The counting methods do nothing on a nil *nodeMetrics (services built
// without one in tests).

// messagesIn counts records stored for topic by a send.
func (nm *nodeMetrics) messagesIn(topic, msgType string, records [][]byte) {
	if nm == nil {
		return
	}
	lb := nm.labels("topic", topic, "message_type", msgType)
	var bytes int
	for _, r := range records {
		bytes += len(r)
	}
	nm.sink.ObserveEach(mMessageSize, lb, len(records), func(i int) float64 { return float64(len(records[i])) })
	nm.m.IncrCounterWithLabels([]string{mMessagesIn}, float32(len(records)), lb)
	nm.m.IncrCounterWithLabels([]string{mThroughputIn}, float32(bytes), lb)
	nm.stats.add(protocol.StatsTopicPutNums, topic, int64(len(records)))
	nm.stats.add(protocol.StatsTopicPutSize, topic, int64(bytes))
	nm.stats.add(protocol.StatsBrokerPut, nm.cluster, int64(len(records)))
}

// messagesOut counts messages a pull delivered to group.
func (nm *nodeMetrics) messagesOut(topic, group string, n, bytes int) {
	if nm == nil {
		return
	}
	lb := nm.labels("topic", topic, "consumer_group", group)
	nm.m.IncrCounterWithLabels([]string{mMessagesOut}, float32(n), lb)
	nm.m.IncrCounterWithLabels([]string{mThroughputOut}, float32(bytes), lb)
	nm.stats.add(protocol.StatsGroupGetNums, topic+"@"+group, int64(n))
	nm.stats.add(protocol.StatsGroupGetSize, topic+"@"+group, int64(bytes))
	nm.stats.add(protocol.StatsBrokerGet, nm.cluster, int64(n))
}

// sentToDLQ counts a message of topic that group gave up on.
func (nm *nodeMetrics) sentToDLQ(topic, group string) {
	if nm == nil {
		return
	}
	nm.m.IncrCounterWithLabels([]string{mSendToDLQ}, 1, nm.labels("topic", topic, "consumer_group", group))
}

// rpc records one request's handling time and answer.
func (nm *nodeMetrics) rpc(code, respCode int16, d time.Duration) {
	if nm == nil {
		return
	}
	nm.sink.Observe(mRPCLatency, float64(d)/float64(time.Millisecond), nm.labels("protocol_type", "remoting",
		"request_code", strconv.Itoa(int(code)), "response_code", strconv.Itoa(int(respCode))))
}

// fsync is the commitlog's OnSync.
func (nm *nodeMetrics) fsync(d time.Duration, entries int) {
	if nm == nil {
		return
	}
	lb := nm.base
	nm.sink.Observe(mFsyncLatency, float64(d)/float64(time.Millisecond), lb)
	nm.sink.Observe(mEntriesPerFsync, float64(entries), lb)
}

// messageType is RocketMQ's message_type label of a send.
func messageType(props map[string]string) string {
	switch {
	case props[message.PropertyTransactionPrepared] == "true":
		return "transaction"
	case props[message.PropertyDelayLevel] != "", props[message.PropertyTimerDeliverMS] != "", props[message.PropertyTimerDelaySec] != "":
		return "delay"
	}
	return "normal"
}

// timedMux records every request's handling time (rocketmq_rpc_latency):
// a held pull counts its hold. Requests answered by nothing (one-way) are
// not recorded.
type timedMux struct {
	inner mux
	m     *nodeMetrics
}

func (t timedMux) HandleFunc(code int16, f func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command) {
	t.inner.HandleFunc(code, func(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
		start := time.Now()
		resp := f(ctx, c, req)
		if resp != nil {
			t.m.rpc(req.Code, resp.Code, time.Since(start))
		}
		return resp
	})
}

// MetricNames lists the series names /metrics exports besides raft's own
// raft_* (histograms without their _bucket, _sum and _count suffixes).
func MetricNames() []string {
	names := []string{mMessagesIn, mMessagesOut, mThroughputIn, mThroughputOut, mMessageSize, mLagMessages,
		mLagLatency, mInflight, mSendToDLQ, mStorageSize, mDispatchBehind, mTimingMessages, mRPCLatency,
		mFsyncLatency, mEntriesPerFsync, mRaftApplyLag, "raftmq_raft_is_leader"}
	for n := range metricGauges {
		names = append(names, n)
	}
	return names
}
