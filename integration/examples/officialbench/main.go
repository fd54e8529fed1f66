// Command officialbench measures the unmodified Apache RocketMQ Go client
// against a cluster: N producer instances (each its own client instance
// and connections) sending synchronously for a duration, as the client's
// own benchmark producer does. It prints one line:
//
//	official-bench workload=produce mode=sync size=1000 clients=16 msgs=… errors=… elapsed_s=… msgs_per_sec=… p50_ms=… p99_ms=… p999_ms=… max_ms=…
//
//	cd integration && go run ./examples/officialbench -namesrv 127.0.0.1:9876 -clients 16 -duration 20s
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	nsAddr := flag.String("namesrv", "127.0.0.1:9876", "name server address")
	topic := flag.String("topic", "bench-official", "topic (must exist, or be auto-created)")
	clients := flag.Int("clients", 16, "producer instances")
	size := flag.Int("size", 1000, "body size in bytes")
	dur := flag.Duration("duration", 20*time.Second, "how long to send")
	flag.Parse()
	rlog.SetLogLevel("error")
	if err := run(*nsAddr, *topic, *clients, *size, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "officialbench:", err)
		os.Exit(1)
	}
}

// sender is one producer instance's results.
type sender struct {
	lat  []time.Duration
	errs int
}

func run(nsAddr, topic string, clients, size int, dur time.Duration) error {
	ns := primitive.NewPassthroughResolver([]string{nsAddr})
	var ps []rocketmq.Producer
	defer func() {
		for _, p := range ps {
			_ = p.Shutdown()
		}
	}()
	for i := range clients {
		p, err := rocketmq.NewProducer(producer.WithNsResolver(ns), producer.WithGroupName("officialbench"),
			producer.WithInstanceName(fmt.Sprint("officialbench-", i)), producer.WithRetry(2))
		if err != nil {
			return err
		}
		if err := p.Start(); err != nil {
			return err
		}
		ps = append(ps, p)
	}
	// Warm up: each instance sends once, so routes and connections exist.
	body := bytes.Repeat([]byte("x"), size)
	for _, p := range ps {
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
			return fmt.Errorf("warm-up send: %w", err)
		}
	}
	var stop atomic.Bool
	results := make([]sender, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			for !stop.Load() {
				t0 := time.Now()
				if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
					r.errs++
					continue
				}
				r.lat = append(r.lat, time.Since(t0))
			}
		}()
	}
	time.Sleep(dur)
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	errs := 0
	for _, r := range results {
		all = append(all, r.lat...)
		errs += r.errs
	}
	slices.Sort(all)
	q := func(f float64) string {
		if len(all) == 0 {
			return "0"
		}
		return fmt.Sprintf("%.3f", float64(all[min(len(all)-1, int(f*float64(len(all))))])/1e6)
	}
	fmt.Printf("official-bench workload=produce mode=sync size=%d clients=%d msgs=%d errors=%d elapsed_s=%.3f msgs_per_sec=%.0f p50_ms=%s p99_ms=%s p999_ms=%s max_ms=%s\n",
		size, clients, len(all), errs, elapsed.Seconds(), float64(len(all))/elapsed.Seconds(), q(0.5), q(0.99), q(0.999), q(1))
	return nil
}
