package client

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// TestPullFollowsSuggestionBackToLeader scripts a leader that always
// suggests follower 1 and a follower that answers, in turn, an offset
// moved backwards, SERVICE_NOT_AVAILABLE, and a caught-up answer
// suggesting 0. After each the queue's next pull goes to the leader — at
// the offset it had, not the one the follower moved it to.
func TestPullFollowsSuggestionBackToLeader(t *testing.T) {
	ns, leader, follower := startFake(t), startFake(t), startFake(t)
	route, _ := json.Marshal(protocol.TopicRouteData{
		QueueDatas: []protocol.QueueData{{BrokerName: "b", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		BrokerDatas: []protocol.BrokerData{{Cluster: "c", BrokerName: "b",
			BrokerAddrs: map[int64]string{0: leader.addr, 1: follower.addr}}},
	})
	ns.srv.HandleFunc(remoting.ReqGetRouteInfoByTopic, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
		resp.Body = route
		return resp
	})
	var mu sync.Mutex
	var pulls []string // "L@offset" or "F@offset", in order
	answer := func(req *remoting.Command, code int16, next int64, suggest string) *remoting.Command {
		resp := remoting.NewResponse(req, code, "scripted")
		resp.ExtFields = map[string]string{"nextBeginOffset": strconv.FormatInt(next, 10), "minOffset": "0",
			"maxOffset": "5", "suggestWhichBrokerId": suggest}
		return resp
	}
	for _, f := range []*fakeServer{leader, follower} {
		f.srv.HandleFunc(remoting.ReqHeartBeat, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
			return remoting.NewResponse(req, remoting.ResSuccess, "")
		})
	}
	leader.srv.HandleFunc(remoting.ReqQueryConsumerOffset, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		return remoting.NewResponse(req, remoting.ResQueryNotFound, "none")
	})
	leader.srv.HandleFunc(remoting.ReqPullMessage, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		mu.Lock()
		pulls = append(pulls, "L@"+req.ExtFields["queueOffset"])
		mu.Unlock()
		return answer(req, remoting.ResPullNotFound, 5, "1")
	})
	followerPulls := 0
	follower.srv.HandleFunc(remoting.ReqPullMessage, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		mu.Lock()
		pulls = append(pulls, "F@"+req.ExtFields["queueOffset"])
		followerPulls++
		n := followerPulls
		mu.Unlock()
		switch n {
		case 1:
			return answer(req, remoting.ResPullOffsetMoved, 0, "1")
		case 2:
			return remoting.NewResponse(req, remoting.ResServiceNotAvailable, "scripted: no leader")
		}
		return answer(req, remoting.ResPullNotFound, 5, "0")
	})

	startAssignedPullConsumer(t, ns, WithConsumeFrom(ConsumeFromFirst()), WithSuspendTimeout(time.Second))
	want := []string{"L@0", "F@5", "L@5", "F@5", "L@5", "F@5", "L@5"}
	var got []string
	eventually(t, 10*time.Second, func() error {
		mu.Lock()
		got = slices.Clone(pulls)
		mu.Unlock()
		if len(got) < len(want) {
			return fmt.Errorf("pulls so far %v", got)
		}
		return nil
	})
	if !slices.Equal(got[:len(want)], want) {
		t.Fatalf("pulls %v, want them to begin %v", got, want)
	}
}
