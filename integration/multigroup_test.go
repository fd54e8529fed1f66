package integration

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// startTwoGroups starts broker-a and broker-b (6 broker processes) under
// one name server and creates topic with queues queues on both.
func startTwoGroups(t *testing.T, topic string, queues int) (*cluster, *cluster, *client.Admin) {
	t.Helper()
	a := startCluster(t)
	b := a.addGroup("broker-b")
	adm := newTestAdmin(t, a.nsAddr)
	waitFor(t, 20*time.Second, func() bool { // both groups registered
		ci, err := adm.ClusterInfo(context.Background())
		return err == nil && len(ci.BrokerAddrTable) == 2
	})
	placed, err := adm.CreateTopic(context.Background(), client.TopicConfig{Topic: topic, Queues: queues})
	if err != nil || len(placed) != 2 {
		t.Fatalf("topic %s on both groups: %v %+v", topic, err, placed)
	}
	waitFor(t, 20*time.Second, func() bool {
		rd, err := adm.Route(context.Background(), topic)
		return err == nil && len(rd.QueueDatas) == 2
	})
	return a, b, adm
}

// TestMultiGroupOfficialClient: with two groups under one name server the
// official producer's sends spread over both, and a clustering group of
// two official push consumers covers every queue of both groups between
// them and consumes every message exactly once.
func TestMultiGroupOfficialClient(t *testing.T) {
	a, _, _ := startTwoGroups(t, "Multi", 4)
	var mu sync.Mutex
	deliveries := map[int]int{}
	queuesOf := []map[string]bool{{}, {}}
	handler := func(k int) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				queuesOf[k][m.Queue.BrokerName+"#"+strconv.Itoa(m.Queue.QueueId)] = true
				if idx, err := strconv.Atoi(m.GetProperty("idx")); err == nil {
					deliveries[idx]++
				}
			}
			return consumer.ConsumeSuccess, nil
		}
	}
	for k := range 2 {
		pc := startOfficialConsumer(t, a.nsAddr, "multi-group", "Multi", consumer.MessageSelector{}, handler(k))
		defer pc.Shutdown()
	}
	p := newOfficialProducer(t, a.nsAddr, "multi-producer")
	// Probes, one per queue, until both consumers consumed from their
	// queues: the allocation has settled; probes are not counted.
	waitFor(t, 60*time.Second, func() bool {
		for q := range 8 {
			m := e2eMessage("Multi", -1-q)
			if _, err := p.SendSync(context.Background(), m); err != nil {
				return false
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return len(queuesOf[0]) > 0 && len(queuesOf[1]) > 0 && len(queuesOf[0])+len(queuesOf[1]) >= 8
	})
	const n = 2000
	perGroup := map[string]int{}
	for i := range n {
		r, err := p.SendSync(context.Background(), e2eMessage("Multi", i))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		perGroup[r.MessageQueue.BrokerName]++
	}
	t.Logf("sends per group: %v", perGroup)
	if perGroup["broker-a"] == 0 || perGroup["broker-b"] == 0 {
		t.Fatalf("sends did not spread over both groups: %v", perGroup)
	}
	waitFor(t, 90*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for i := range n {
			if deliveries[i] == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	all := map[string]bool{}
	for k, qs := range queuesOf {
		for q := range qs {
			if all[q] {
				t.Errorf("queue %s consumed by both members (consumer %d)", q, k)
			}
			all[q] = true
		}
	}
	if len(all) != 8 {
		t.Errorf("the members covered %d queues, want the 8 of both groups: %v", len(all), queuesOf)
	}
	for i := range n {
		if deliveries[i] != 1 {
			t.Errorf("message %d delivered %d times", i, deliveries[i])
		}
	}
}

// loadProducer sends idx 0, 1, … to topic from 4 goroutines until stop,
// recording what was acknowledged, per group, and the longest gap between
// acknowledgements.
type loadProducer struct {
	p                 *client.Producer
	mu                sync.Mutex
	acked             map[int]bool
	perGroup          map[string]int
	failed, next, gap atomic.Int64
	last              atomic.Int64
	stop              chan struct{}
	wg                sync.WaitGroup
}

func startLoad(t *testing.T, ns, topic string) *loadProducer {
	t.Helper()
	p, err := client.NewProducer("multi-load", client.WithNameServers(ns), client.WithRouteRefreshInterval(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	l := &loadProducer{p: p, acked: map[int]bool{}, perGroup: map[string]int{}, stop: make(chan struct{})}
	l.last.Store(time.Now().UnixNano())
	for range 4 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				idx := int(l.next.Add(1) - 1)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				r, err := p.Send(ctx, sdkMessage(topic, idx))
				cancel()
				if err != nil {
					l.failed.Add(1)
					t.Logf("send %d failed: %v", idx, err)
					continue
				}
				now := time.Now().UnixNano()
				if g := now - l.last.Swap(now); g > l.gap.Load() {
					l.gap.Store(g)
				}
				l.mu.Lock()
				l.acked[idx] = true
				l.perGroup[r.Queue.BrokerName]++
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *loadProducer) count() int      { l.mu.Lock(); defer l.mu.Unlock(); return len(l.acked) }
func (l *loadProducer) on(g string) int { l.mu.Lock(); defer l.mu.Unlock(); return l.perGroup[g] }

func (l *loadProducer) halt() map[int]bool {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int]bool, len(l.acked))
	for k := range l.acked {
		out[k] = true
	}
	return out
}

// expectAllConsumed waits until col has every acknowledged message and
// reports how many were delivered twice.
func expectAllConsumed(t *testing.T, col *sdkCollector, acked map[int]bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		col.mu.Lock()
		missing := 0
		for k := range acked {
			if col.got[k] == nil {
				missing++
			}
		}
		col.mu.Unlock()
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged messages never consumed", missing, len(acked))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMultiGroupLeaderKill: a leader kill in one of two groups costs our
// SDK's sends no failure and a bounded gap, and loses nothing.
func TestMultiGroupLeaderKill(t *testing.T) {
	a, _, _ := startTwoGroups(t, "MultiKill", 4)
	l := startLoad(t, a.nsAddr, "MultiKill")
	waitFor(t, 20*time.Second, func() bool { return l.count() >= 500 })
	l.gap.Store(0)
	leader := a.waitLeader(5 * time.Second)
	a.kill(leader)
	before := l.count()
	waitFor(t, 30*time.Second, func() bool { return l.count() >= before+1000 && l.on("broker-a") > 0 })
	acked := l.halt()
	gap := time.Duration(l.gap.Load())
	t.Logf("leader kill in broker-a: longest gap between acknowledgements %v; %d sends failed; per group %v", gap, l.failed.Load(), l.perGroup)
	if l.failed.Load() != 0 {
		t.Errorf("%d sends failed", l.failed.Load())
	}
	if gap > failoverSanityBound {
		t.Errorf("gap %v over %v", gap, failoverSanityBound)
	}
	col := &sdkCollector{got: map[int]*message.MessageExt{}}
	startSDKConsumer(t, a.nsAddr, "multi-kill-group", "MultiKill", "mk", col.handle)
	expectAllConsumed(t, col, acked)
}

// TestMultiGroupAddGroupUnderLoad: a third group added while our SDK
// produces and consumes; extending the topic onto it moves sends there
// within route refreshes, and every acknowledged message is consumed.
func TestMultiGroupAddGroupUnderLoad(t *testing.T) {
	a, _, adm := startTwoGroups(t, "MultiAdd", 2)
	col := &sdkCollector{got: map[int]*message.MessageExt{}}
	startSDKConsumer(t, a.nsAddr, "multi-add-group", "MultiAdd", "ma", col.handle, client.WithRouteRefreshInterval(500*time.Millisecond))
	l := startLoad(t, a.nsAddr, "MultiAdd")
	waitFor(t, 20*time.Second, func() bool { return l.count() >= 300 })
	c3 := a.addGroup("broker-c")
	placed, err := adm.ExtendTopic(context.Background(), "MultiAdd", "broker-c")
	if err != nil || len(placed) != 1 || placed[0].BrokerName != "broker-c" {
		t.Fatalf("extending onto broker-c: %v %+v", err, placed)
	}
	waitFor(t, 30*time.Second, func() bool { return l.on("broker-c") >= 200 })
	acked := l.halt()
	t.Logf("sends per group: %v; %d failed", l.perGroup, l.failed.Load())
	if l.failed.Load() != 0 {
		t.Errorf("%d sends failed", l.failed.Load())
	}
	expectAllConsumed(t, col, acked)
	col.mu.Lock()
	defer col.mu.Unlock()
	hostsC := map[string]bool{}
	for _, n := range c3.nodes {
		hostsC[n.addr] = true
	}
	fromC := 0
	for _, m := range col.got {
		if hostsC[m.StoreHost.String()] {
			fromC++
		}
	}
	if fromC == 0 {
		t.Errorf("the consumer took nothing from broker-c's queues")
	}
}

// TestMultiGroupDrain: draining broker-b under load moves sends to
// broker-a without a failed send, waits until its messages are consumed,
// and after its nodes stop nothing acknowledged is missing.
func TestMultiGroupDrain(t *testing.T) {
	a, b, adm := startTwoGroups(t, "MultiDrain", 4)
	col := &sdkCollector{got: map[int]*message.MessageExt{}}
	startSDKConsumer(t, a.nsAddr, "multi-drain-group", "MultiDrain", "md", col.handle, client.WithRouteRefreshInterval(500*time.Millisecond))
	l := startLoad(t, a.nsAddr, "MultiDrain")
	waitFor(t, 20*time.Second, func() bool { return l.on("broker-b") >= 200 })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := adm.Drain(ctx, "broker-b", 200*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	onB := l.on("broker-b")
	before := l.count()
	waitFor(t, 20*time.Second, func() bool { return l.count() >= before+500 })
	if got := l.on("broker-b"); got != onB {
		t.Errorf("%d sends landed on broker-b after its drain", got-onB)
	}
	for i := range b.nodes {
		if err := b.nodes[i].p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i := range b.nodes {
		_ = b.nodes[i].p.wait(t, 20*time.Second)
	}
	before = l.count()
	waitFor(t, 20*time.Second, func() bool { return l.count() >= before+300 })
	acked := l.halt()
	t.Logf("sends per group: %v; %d failed", l.perGroup, l.failed.Load())
	if l.failed.Load() != 0 {
		t.Errorf("%d sends failed", l.failed.Load())
	}
	expectAllConsumed(t, col, acked)
	rd, err := adm.Route(context.Background(), "MultiDrain")
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.QueueDatas) != 1 || rd.QueueDatas[0].BrokerName != "broker-a" {
		t.Errorf("after the drained group stopped, the route holds %+v", rd.QueueDatas)
	}
}

// TestTwoNameServers: brokers register with both name servers; with the
// first one killed, the official client and our SDK (given both) still
// route, send and consume.
func TestTwoNameServers(t *testing.T) {
	c := startClusterWith(t, clusterOpts{moreNamesrvs: 1})
	ns1, ns2 := c.nsAddr, c.extraNSAddrs[0]
	createTopicOn(t, c, "TwoNS", 4)
	for _, ns := range []string{ns1, ns2} {
		adm := newTestAdmin(t, ns)
		waitFor(t, 20*time.Second, func() bool {
			rd, err := adm.Route(context.Background(), "TwoNS")
			return err == nil && len(rd.QueueDatas) == 1 && rd.BrokerDatas[0].BrokerAddrs[0] != ""
		})
	}
	if err := c.ns.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.ns.wait(t, 10*time.Second)

	both := ns1 + ";" + ns2
	p, err := client.NewProducer("two-ns", client.WithNameServers(both))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	const n = 100
	for i := range n {
		if _, err := p.Send(context.Background(), sdkMessage("TwoNS", i)); err != nil {
			t.Fatalf("SDK send %d with the first name server down: %v", i, err)
		}
	}
	op := officialProducerAs(t, ns2, "two-ns-official", nil)
	for i := n; i < 2*n; i++ {
		if _, err := op.SendSync(context.Background(), e2eMessage("TwoNS", i)); err != nil {
			t.Fatalf("official send %d through the second name server: %v", i, err)
		}
	}
	col := &sdkCollector{got: map[int]*message.MessageExt{}}
	startSDKConsumer(t, both, "two-ns-group", "TwoNS", "tn", col.handle)
	waitFor(t, 60*time.Second, func() bool { return col.count() == 2*n })
}
