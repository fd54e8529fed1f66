package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/raftmq/raftmq/broker/brokertest"
)

// TestConsumeCommand: consume --count prints exactly that many messages
// and commits exactly those, so the next run of the group goes on from
// the first unprinted one; --expr filters by tag.
func TestConsumeCommand(t *testing.T) {
	g := brokertest.Start(t, brokertest.Options{})
	g.WaitLeader(10 * time.Second)
	g.Eventually(10*time.Second, func() error {
		_, _, err := run(t, "topic", "create", "-n", g.NSAddr, "-t", "cli-consume", "-q", "1")
		return err
	})
	for i := range 5 {
		tag := "keep"
		if i == 2 {
			tag = "skip"
		}
		if _, _, err := run(t, "send", "-n", g.NSAddr, "-t", "cli-consume", "--tag", tag, "--keys", fmt.Sprint("k", i), "-b", fmt.Sprint("body-", i)); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(n int) []printedMessage {
		out, _, err := run(t, "consume", "-n", g.NSAddr, "-t", "cli-consume", "-g", "cli-g", "--from", "first",
			"--expr", "keep", "--format", "json", "--count", fmt.Sprint(n))
		if err != nil {
			t.Fatal(err)
		}
		var got []printedMessage
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var m printedMessage
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			got = append(got, m)
		}
		return got
	}
	first := consume(2)
	second := consume(2)
	var bodies []string
	for _, m := range append(first, second...) {
		bodies = append(bodies, m.Body)
		if m.Tags != "keep" || m.MsgID == "" || len(m.Keys) != 1 {
			t.Errorf("printed %+v", m)
		}
	}
	if want := "body-0 body-1 body-3 body-4"; strings.Join(bodies, " ") != want {
		t.Fatalf("two runs printed %v, want %s", bodies, want)
	}
}
