package broker

import (
	"testing"
	"time"
)

// TestStatsTpsTriple: the runtime-info rate string is the rate over the
// last 10 s, minute and 10 minutes, from the sampled windows.
func TestStatsTpsTriple(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	b := newBrokerStats()
	b.now = func() time.Time { return now }
	if got := b.tpsTriple("PUT", "c"); got != "0.00 0.00 0.00" {
		t.Fatalf("no item: %q", got)
	}
	// 100 messages per 10 s step for 10 minutes, then 600 in the last 10 s.
	b.add("PUT", "c", 0)
	for range 60 {
		now = now.Add(10 * time.Second)
		b.add("PUT", "c", 100)
		b.sampleAll()
	}
	now = now.Add(10 * time.Second)
	b.add("PUT", "c", 600)
	// 10 s: 600/10; minute: (5*100+600)/60; 10 minutes: from the hour
	// window's sample at least 600 s old (the zero at start), 6600/610.
	if got, want := b.tpsTriple("PUT", "c"), "60.00 18.33 10.82"; got != want {
		t.Fatalf("tps %q, want %q", got, want)
	}
	if got := b.total("PUT", "c"); got != 6600 {
		t.Fatalf("total %d", got)
	}
}
