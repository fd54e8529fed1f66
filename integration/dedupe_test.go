package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// sentAt is where a send answer says a message is stored.
type sentAt struct {
	offsetMsgID string
	queue       int
	offset      int64
}

// TestDedupeRetriedSends re-sends messages the way a producer's retry
// does — the same message, same UNIQ_KEY (both clients set it only when
// absent, and their retry loops re-send the message they were given) —
// with the official Go client and with our SDK, before and after a leader
// kill. Every re-send inside the window is answered with the first send's
// result, and each message is stored once.
func TestDedupeRetriedSends(t *testing.T) {
	c := startCluster(t)
	const topic, n = "Dedupe", 10
	createTopicOn(t, c, topic, 2)
	official := newOfficialProducer(t, c.nsAddr, "dedupe-official")
	sdk := newSDKProducer(t, c.nsAddr)

	officialMsgs := make([]*primitive.Message, n)
	sdkMsgs := make([]*message.Message, n)
	first := map[string]sentAt{}
	for i := range n {
		officialMsgs[i] = e2eMessage(topic, i)
		sdkMsgs[i] = sdkMessage(topic, 100+i)
		for try := 0; try < 2; try++ {
			o := sendOfficial(t, official, officialMsgs[i])
			s := sendSDK(t, sdk, sdkMsgs[i])
			if try == 0 {
				first[officialMsgs[i].GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)] = o
				first[sdkMsgs[i].UniqKey()] = s
				continue
			}
			expectSame(t, first, officialMsgs[i].GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex), o, "official re-send")
			expectSame(t, first, sdkMsgs[i].UniqKey(), s, "SDK re-send")
		}
	}

	leader := c.waitLeader(10 * time.Second)
	c.kill(leader)
	nl := c.waitLeader(20*time.Second, leader)
	for i := range n {
		expectSame(t, first, officialMsgs[i].GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex),
			sendOfficial(t, official, officialMsgs[i]), "official re-send after failover")
		expectSame(t, first, sdkMsgs[i].UniqKey(), sendSDK(t, sdk, sdkMsgs[i]), "SDK re-send after failover")
	}
	offs, err := c.maxOffsets(nl, topic, 2)
	if err != nil {
		t.Fatal(err)
	}
	if stored := offs[0] + offs[1]; stored != 2*n {
		t.Fatalf("%d messages stored for %d distinct ones sent 3 times each", stored, 2*n)
	}
	tab, err := c.runtime(nl)
	if err != nil {
		t.Fatal(err)
	}
	if tab["msgPutDuplicates"] != fmt.Sprint(2*n) {
		t.Errorf("new leader counts %s duplicates, want %d", tab["msgPutDuplicates"], 2*n)
	}
}

// sendOfficial sends m with the official client, retrying while the
// group elects a leader and the client refreshes its route (every 30 s).
func sendOfficial(t *testing.T, p rocketmq.Producer, m *primitive.Message) sentAt {
	t.Helper()
	var at sentAt
	waitFor(t, 60*time.Second, func() bool {
		r, err := p.SendSync(context.Background(), m)
		if err != nil || r.Status != primitive.SendOK {
			return false
		}
		at = sentAt{r.OffsetMsgID, r.MessageQueue.QueueId, r.QueueOffset}
		return true
	})
	return at
}

// sendSDK sends m with our producer, retrying while the group elects.
func sendSDK(t *testing.T, p *client.Producer, m *message.Message) sentAt {
	t.Helper()
	var at sentAt
	waitFor(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := p.Send(ctx, m)
		if err != nil {
			return false
		}
		at = sentAt{r.OffsetMsgID, int(r.Queue.QueueID), r.QueueOffset}
		return true
	})
	return at
}

func expectSame(t *testing.T, first map[string]sentAt, uniq string, got sentAt, what string) {
	t.Helper()
	if want, ok := first[uniq]; !ok || got != want {
		t.Fatalf("%s of %s answered %+v, first send %+v", what, uniq, got, want)
	}
}
