package integration

import (
	"strconv"
	"testing"
	"time"
)

// TestOfficialClientReadsFromFollower: with a 16 KiB far-behind threshold
// (--access-message-in-memory-max-bytes), the official Go client's push
// consumer of a backlog is told to pull from a follower, pulls there
// (followers' msgGetTotalTodayNow grows), and still receives every
// message intact.
func TestOfficialClientReadsFromFollower(t *testing.T) {
	c := startClusterWith(t, clusterOpts{brokerArgs: []string{"--access-message-in-memory-max-bytes", "16384"}})
	const topic, n = "FollowerReadOfficial", 1000
	createTopicOn(t, c, topic, 2)
	p := newOfficialProducer(t, c.nsAddr, "fr-producer")
	acked := sendConcurrently(t, p, topic, n, 8)
	if len(acked) != n {
		t.Fatalf("%d of %d sends acknowledged", len(acked), n)
	}
	waitFor(t, 20*time.Second, func() bool {
		for i := range c.nodes {
			offs, err := c.maxOffsets(i, topic, 2)
			if err != nil || offs[0]+offs[1] != n {
				return false
			}
		}
		return true
	})
	got := consumeAll(t, c.nsAddr, topic, "fr-official", acked, 60*time.Second)
	for i := range n {
		m := got[i]
		if m == nil {
			t.Fatalf("message %d not consumed (%d of %d)", i, len(got), n)
		}
		if string(m.Body) != "body-"+strconv.Itoa(i) || m.GetTags() != "T"+strconv.Itoa(i%3) {
			t.Fatalf("message %d altered: body %q tags %q", i, m.Body, m.GetTags())
		}
	}
	leader := c.waitLeader(10 * time.Second)
	byFollowers, counts := int64(0), make([]string, len(c.nodes))
	for i := range c.nodes {
		tab, err := c.runtime(i)
		if err != nil {
			t.Fatalf("runtime of node %d: %v", i, err)
		}
		counts[i] = tab["msgGetTotalTodayNow"]
		if v, err := strconv.ParseInt(counts[i], 10, 64); err == nil && i != leader {
			byFollowers += v
		}
	}
	t.Logf("messages served by node (leader %d): %v", leader, counts)
	if byFollowers == 0 {
		t.Fatalf("no follower served a pull (by node %v, leader %d)", counts, leader)
	}
}
