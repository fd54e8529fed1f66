package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// pullRecorder is a fake broker's PULL_MESSAGE handler that holds each
// pull for its suspend timeout and answers PULL_NOT_FOUND, recording when
// each pull arrived.
type pullRecorder struct {
	mu       sync.Mutex
	arrivals []time.Time
}

func (r *pullRecorder) serve(ctx context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	r.mu.Lock()
	r.arrivals = append(r.arrivals, time.Now())
	r.mu.Unlock()
	ms, _ := strconv.ParseInt(req.ExtFields["suspendTimeoutMillis"], 10, 64)
	remoting.Park(ctx)
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
	case <-ctx.Done():
		return nil
	}
	resp := remoting.NewResponse(req, remoting.ResPullNotFound, "held")
	resp.ExtFields = map[string]string{"nextBeginOffset": "0", "minOffset": "0", "maxOffset": "0"}
	return resp
}

func (r *pullRecorder) pulls() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.arrivals...)
}

// fakePullCluster is a fake name server routing topic "T" (one queue) to
// the given addresses (brokerId 0 first) and fake brokers that answer
// heartbeats and offset queries; each broker's pulls go to its recorder.
func fakePullCluster(t *testing.T, routeAddrs []string, brokers map[*fakeServer]*pullRecorder) *fakeServer {
	t.Helper()
	ns := startFake(t)
	addrs := map[int64]string{}
	for i, a := range routeAddrs {
		addrs[int64(i)] = a
	}
	route, _ := json.Marshal(protocol.TopicRouteData{
		QueueDatas:  []protocol.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: addrs}},
	})
	ns.srv.HandleFunc(remoting.ReqGetRouteInfoByTopic, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
		resp.Body = route
		return resp
	})
	for f, rec := range brokers {
		f.srv.HandleFunc(remoting.ReqHeartBeat, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			return remoting.NewResponse(req, remoting.ResSuccess, "")
		})
		f.srv.HandleFunc(remoting.ReqQueryConsumerOffset, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			resp := remoting.NewResponse(req, remoting.ResSuccess, "")
			resp.ExtFields["offset"] = "0"
			return resp
		})
		f.srv.HandleFunc(remoting.ReqPullMessage, rec.serve)
	}
	return ns
}

// startAssignedPullConsumer starts a pull consumer of group cg-fake with
// queue T@b#0 assigned, routed by the fake name server ns; it is closed
// when the test ends.
func startAssignedPullConsumer(t *testing.T, ns *fakeServer, opts ...PullConsumerOpt) {
	t.Helper()
	opts = append([]PullConsumerOpt{WithNameServers(ns.addr), WithLogger(testLogger(t)), WithInstanceName("fake")}, opts...)
	pc, err := NewPullConsumer("cg-fake", opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Assign(MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(testCtx(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close(context.Background()) })
}

// TestLongPollHeldPastRequestTimeout: a pull the broker holds for its
// suspend timeout (1.5 s) is waited for, though the request timeout is
// 300 ms: the next pull comes after the held one is answered. Before, the
// request timeout cut every held pull, and an idle queue pulled again
// every 300 ms (plus a route refresh each time).
func TestLongPollHeldPastRequestTimeout(t *testing.T) {
	broker, rec := startFake(t), &pullRecorder{}
	ns := fakePullCluster(t, []string{broker.addr}, map[*fakeServer]*pullRecorder{broker: rec})
	const suspend = 1500 * time.Millisecond
	startAssignedPullConsumer(t, ns, WithRequestTimeout(300*time.Millisecond), WithSuspendTimeout(suspend))
	var pulls []time.Time
	eventually(t, 10*time.Second, func() error {
		if pulls = rec.pulls(); len(pulls) < 2 {
			return fmt.Errorf("%d pulls so far", len(pulls))
		}
		return nil
	})
	if gap := pulls[1].Sub(pulls[0]); gap < suspend-100*time.Millisecond {
		t.Fatalf("second pull %v after the first, before the first's %v hold ended", gap, suspend)
	}
}

// freezingProxy forwards TCP connections to target until freeze, after
// which it drops every byte both ways and keeps the connections open: a
// paused process or a silent partition, seen from the client.
type freezingProxy struct {
	addr   string
	frozen atomic.Bool
}

func startFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var conns sync.Map
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !p.frozen.Load() {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					t.Logf("proxy: %v", err)
				}
				return
			}
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				_ = in.Close()
				continue
			}
			conns.Store(in, true)
			conns.Store(out, true)
			wg.Add(2)
			go pipe(out, in)
			go pipe(in, out)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Range(func(k, _ any) bool { _ = k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	return p
}

// TestHeldPullLeavesFrozenNode: a pull held by a node that then freezes
// (reached through a proxy that stops forwarding) fails once the
// connection's liveness probe goes unanswered, and the queue's next pull
// goes to the other node of the route within seconds, though the request
// timeout is 10 s and the suspend timeout 20 s.
func TestHeldPullLeavesFrozenNode(t *testing.T) {
	leader, follower := startFake(t), startFake(t)
	leaderRec, followerRec := &pullRecorder{}, &pullRecorder{}
	proxy := startFreezingProxy(t, leader.addr)
	ns := fakePullCluster(t, []string{proxy.addr, follower.addr},
		map[*fakeServer]*pullRecorder{leader: leaderRec, follower: followerRec})
	startAssignedPullConsumer(t, ns, WithRequestTimeout(10*time.Second), WithSuspendTimeout(20*time.Second))
	eventually(t, 10*time.Second, func() error {
		if len(leaderRec.pulls()) == 0 {
			return errors.New("no pull at the leader yet")
		}
		return nil
	})
	proxy.frozen.Store(true)
	frozenAt := time.Now()
	var moved time.Duration
	eventually(t, 15*time.Second, func() error {
		p := followerRec.pulls()
		if len(p) == 0 {
			return errors.New("no pull at the follower yet")
		}
		moved = p[0].Sub(frozenAt)
		return nil
	})
	if moved > 6*time.Second {
		t.Fatalf("the queue's pull reached the follower %v after the leader froze", moved)
	}
	t.Logf("pull moved to the follower %v after the freeze", moved)
}
