package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
)

// TestOfficialClientSQL92 subscribes the official Go client's push
// consumer with an SQL92 selector: it receives exactly the messages whose
// properties match (the broker filters; the client does not).
func TestOfficialClientSQL92(t *testing.T) {
	c := startCluster(t)
	const topic = "SQL92"
	createTopicOn(t, c, topic, 2)
	p := newOfficialProducer(t, c.nsAddr, "sql-producer")
	want := map[int]bool{}
	for i := 0; i < 60; i++ {
		m := e2eMessage(topic, i) // tags T0, T1, T2
		m.WithProperty("price", strconv.Itoa(i))
		if _, err := p.SendSync(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		if i >= 30 && i%3 == 0 {
			want[i] = true
		}
	}
	sel := consumer.MessageSelector{Type: consumer.SQL92, Expression: "price >= 30 AND TAGS = 'T0'"}
	got := consumeSelected(t, c.nsAddr, topic, "sql-consumer", sel, want, 60*time.Second)
	for i := range want {
		if got[i] == nil {
			t.Errorf("matching message %d not delivered", i)
		}
	}
	for i, m := range got {
		if !want[i] {
			t.Errorf("message %d (price %s, tags %s) delivered but does not match", i, m.GetProperty("price"), m.GetTags())
		}
	}
}
