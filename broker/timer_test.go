package broker_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func TestTimerMessagesDeliveredOnTime(t *testing.T) {
	g := delayGroup(t, testDelayLevels)
	leader := g.WaitLeader(5 * time.Second)
	createTopicAt(t, g, leader, "timed", 1, 6)
	base := time.Now().UnixMilli()
	due := map[string]int64{}
	for i, after := range []int64{450, 150, 300, 151, 600} { // out of order on purpose
		at := base + after
		k := sendParked(t, g, (leader+i)%g.Len(), "timed", 0, map[string]string{message.PropertyTimerDeliverMS: strconv.FormatInt(at, 10)}, "t"+strconv.Itoa(i))
		due[k] = at
	}
	k := sendParked(t, g, leader, "timed", 0, map[string]string{message.PropertyTimerDelaySec: "1"}, "rel")
	due[k] = time.Now().UnixMilli() + 1000 // upper bound of its deadline
	if n := maxOffsetOf(t, g, leader, "timed", 0); n != 0 {
		t.Fatalf("timer messages visible at once: max offset %d", n)
	}
	past := sendParked(t, g, leader, "timed", 0, map[string]string{message.PropertyTimerDeliverMS: strconv.FormatInt(base-5000, 10)}, "past")
	var got []*message.MessageExt
	g.Eventually(5*time.Second, func() error {
		got = pullAll(t, g, leader, "timed", 0)
		if len(got) < len(due)+1 {
			return fmt.Errorf("%d of %d delivered", len(got), len(due)+1)
		}
		return nil
	})
	if got[0].UniqKey() != past {
		t.Fatalf("a past deadline is stored at once; first message is %s", got[0].UniqKey())
	}
	var worst int64
	for _, m := range got[1:] {
		at, ok := due[m.UniqKey()]
		if !ok {
			t.Fatalf("unexpected %s", m.UniqKey())
		}
		delete(due, m.UniqKey())
		late := m.StoreTimestamp - at
		if m.UniqKey() == k { // relative: deadline in [base+1000, at]
			late = max(late, 0)
		}
		if late < -1 || late > 100 {
			t.Fatalf("%s delivered %d ms from its deadline", m.UniqKey(), late)
		}
		worst = max(worst, late)
		if m.Property(message.PropertyRealTopic) != "timed" || m.Property(message.PropertyTimerDeliverMS) != "" {
			t.Fatalf("delivered timer props %v", m.Properties)
		}
	}
	t.Logf("timers: worst delivery %d ms after deadline", worst)
	for name, props := range map[string]map[string]string{
		"8 days ahead": {message.PropertyTimerDeliverMS: strconv.FormatInt(time.Now().Add(8*24*time.Hour).UnixMilli(), 10)},
		"not a number": {message.PropertyTimerDelaySec: "soon"},
	} {
		resp := g.Invoke(leader, sendMsgReq("timed", 0, props, []byte("x")))
		if resp.Code != remoting.ResMessageIllegal || resp.Remark == "" {
			t.Fatalf("%s: %d %q, want MESSAGE_ILLEGAL", name, resp.Code, resp.Remark)
		}
	}
	if resp := g.Invoke(leader, sendMsgReq(protocol.TimerTopic, 0, nil, []byte("x"))); resp.Code != remoting.ResNoPermission {
		t.Fatalf("send to the timer topic: %d", resp.Code)
	}
}

// Stop the leader while delayed and timer messages fall due: every one is
// delivered exactly once, by whichever leader commits it.
func TestParkedMessagesExactlyOnceAcrossFailover(t *testing.T) {
	g := delayGroup(t, testDelayLevels)
	leader := g.WaitLeader(5 * time.Second)
	createTopicAt(t, g, leader, "fo", 4, 6)
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	base := time.Now().UnixMilli()
	for w := 0; w < 4; w++ { // 120 parked messages due 300..1300 ms from now
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 120; i += 4 {
				props := map[string]string{message.PropertyDelayLevel: strconv.Itoa(3 + i%10)}
				if i%2 == 1 {
					props = map[string]string{message.PropertyTimerDeliverMS: strconv.FormatInt(base+int64(300+(i*37)%1000), 10)}
				}
				k := sendParked(t, g, leader, "fo", i%4, props, "m"+strconv.Itoa(i))
				mu.Lock()
				want[k] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sent := time.Now().UnixMilli() - base
	// Some are delivered by now; stop the leader in the middle of the rest.
	g.Eventually(3*time.Second, func() error {
		if n := maxOffsetOf(t, g, leader, "fo", 0) + maxOffsetOf(t, g, leader, "fo", 1); n < 10 {
			return fmt.Errorf("only %d delivered", n)
		}
		return nil
	})
	before := len(countKeys(t, g, leader, "fo", 4))
	stopAt := time.Now().UnixMilli() - base
	g.StopNode(leader)
	next := g.WaitLeader(10 * time.Second)
	t.Logf("sends took %d ms; leader %d stopped at %d ms with %d of 120 delivered; node %d leads at %d ms",
		sent, leader, stopAt, before, next, time.Now().UnixMilli()-base)
	if before >= 120 {
		t.Fatalf("everything was delivered before the stop: the test proves nothing")
	}
	// More sends to the new leader while it catches up.
	for i := 120; i < 140; i++ {
		props := map[string]string{message.PropertyDelayLevel: "1"}
		if i%2 == 1 {
			props = map[string]string{message.PropertyTimerDelaySec: "0", message.PropertyTimerDeliverMS: strconv.FormatInt(time.Now().UnixMilli()+50, 10)}
		}
		want[sendParked(t, g, next, "fo", i%4, props, "m"+strconv.Itoa(i))] = true
	}
	g.Eventually(10*time.Second, func() error {
		seen := countKeys(t, g, next, "fo", 4)
		for k, n := range seen {
			if !want[k] || n != 1 {
				t.Fatalf("%s delivered %d times", k, n)
			}
		}
		if len(seen) < len(want) {
			return fmt.Errorf("%d of %d delivered", len(seen), len(want))
		}
		return nil
	})
	// Every delivery committed its progress with it, so nothing can be
	// delivered again; the old leader rejoins and holds the same, once each.
	g.StartNode(leader)
	g.Eventually(10*time.Second, func() error {
		seen := countKeys(t, g, leader, "fo", 4)
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("rejoined node: %s stored %d times", k, n)
			}
		}
		if len(seen) != len(want) {
			return fmt.Errorf("rejoined node has %d of %d", len(seen), len(want))
		}
		return nil
	})
}

// TestTimerMillisecondOverOneEntry: more timer messages fall due in one
// millisecond than one raft entry carries (300 of 16 KiB, 4.7 MiB against
// the 4 MiB limit). Rounds are bounded by bytes and split the millisecond
// with the tie cursor: every one is delivered, once. (A round that took
// the whole millisecond was refused as too large, again after every
// restart: nothing was ever delivered.)
func TestTimerMillisecondOverOneEntry(t *testing.T) {
	g := delayGroup(t, testDelayLevels)
	leader := g.WaitLeader(5 * time.Second)
	createTopicAt(t, g, leader, "burst", 1, 6)
	const n = 300
	body := strings.Repeat("x", 16<<10)
	at := time.Now().Add(4 * time.Second).UnixMilli()
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				k := fmt.Sprintf("burst-%d", i)
				sendParked(t, g, leader, "burst", 0, map[string]string{message.PropertyTimerDeliverMS: strconv.FormatInt(at, 10), message.PropertyUniqKey: k}, body)
				mu.Lock()
				want[k] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if now := time.Now().UnixMilli(); now >= at {
		t.Fatalf("sending took until %d ms past the deadline: the burst was not parked in time", now-at)
	}
	g.Eventually(20*time.Second, func() error {
		seen := countKeys(t, g, leader, "burst", 1)
		for k, c := range seen {
			if !want[k] || c != 1 {
				t.Fatalf("%s delivered %d times", k, c)
			}
		}
		if len(seen) < n {
			return fmt.Errorf("%d of %d delivered", len(seen), n)
		}
		return nil
	})
}
