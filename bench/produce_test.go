package bench

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPacerSpacesSends(t *testing.T) {
	if p := newPacer(&Config{Clients: 2}); p.interval != 0 {
		t.Fatalf("no rate: interval %v, want none", p.interval)
	}
	// 2 clients sharing 1000 msg/s: each sends every 2 ms.
	p := newPacer(&Config{Clients: 2, Rate: 1000})
	if p.interval != 2*time.Millisecond {
		t.Fatalf("interval %v, want 2ms", p.interval)
	}
	p.wait(context.Background(), 25)
	if el := time.Since(p.start); el < 50*time.Millisecond {
		t.Fatalf("send 25 allowed after %v, want >= 50ms", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	p.wait(ctx, 1_000_000) // 2000 s away: a canceled context ends the wait
	if time.Since(t0) > time.Second {
		t.Fatal("wait ignored its canceled context")
	}
}

func TestDoneIgnoresSendsCutByStop(t *testing.T) {
	pr := &producers{hist: NewHistogram()}
	live, stopped := context.Background(), canceled()
	pr.done(live, time.Now(), 3, nil)
	pr.done(stopped, time.Now(), 2, context.Canceled) // Ctrl-C: neither acked nor an error
	pr.done(live, time.Now(), 1, context.Canceled)    // canceled while the run goes on: an error
	pr.done(stopped, time.Now(), 1, errors.New("broker said no"))
	if a, e := pr.acked.Load(), pr.errs.Load(); a != 3 || e != 2 {
		t.Fatalf("acked %d, errors %d; want 3 and 2", a, e)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestPropsLabelMessages: with Props, message number k over all clients
// carries n = k mod 10 and tag t<k mod 4>, so SQL92 selections have
// known sizes.
func TestPropsLabelMessages(t *testing.T) {
	pr := &producers{cfg: &Config{Props: true}, body: payload(8), topics: []string{"T"}}
	counts := map[string]int{}
	for k := range 40 {
		m := pr.msg(k%3, time.Now()) // the client index does not matter
		counts["n="+m.Property("n")]++
		counts["tag="+m.Tags()]++
		if m.Property("n") == "0" && m.Tags() == "t0" {
			counts["both"]++
		}
	}
	if counts["n=0"] != 4 || counts["n=9"] != 4 || counts["tag=t0"] != 10 || counts["tag=t3"] != 10 || counts["both"] != 2 {
		t.Fatalf("labels %v: want 4 per n, 10 per tag, 2 with n=0 and t0", counts)
	}
	plain := (&producers{cfg: &Config{}, body: payload(8), topics: []string{"T"}}).msg(0, time.Now())
	if len(plain.Properties) != 0 {
		t.Fatalf("without Props the message has properties %v", plain.Properties)
	}
}
