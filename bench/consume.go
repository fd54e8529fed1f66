package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/client"
)

// consumers is a set of pull consumers of one group sharing a topic's
// queues (assigned round robin, no rebalance) and what they counted.
type consumers struct {
	cs    []*client.PullConsumer
	push  *client.PushConsumer // e2e with Config.Push, instead of cs
	hist  *Histogram           // e2e latency when the bodies are stamped
	stamp bool
	got   atomic.Uint64
	bytes atomic.Uint64
	errs  atomic.Uint64
	first firstError
	last  atomic.Int64 // unix ns of the latest batch's arrival
}

func startConsumers(ctx context.Context, c *Config, qs []client.MessageQueue, stamp bool) (*consumers, error) {
	group := c.Group
	if group == "" {
		group = "raftmq-bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	n := min(c.Clients, len(qs))
	if c.SQL92 != "" {
		n = c.Clients // the rebalance shares the queues
	}
	co := &consumers{hist: NewHistogram(), stamp: stamp}
	for i := range n {
		var mine []client.MessageQueue
		for j := i; j < len(qs); j += n {
			mine = append(mine, qs[j])
		}
		pc, err := client.NewPullConsumer(group, client.WithNameServers(c.NameServers...), client.WithCredentials(c.Credentials), client.WithTLS(c.TLS),
			client.WithInstanceName(instance("consumer", i)), client.WithConsumeFrom(client.ConsumeFromFirst()),
			client.WithPullBatchSize(c.Batch))
		if err == nil {
			err = subscribe(pc, c, mine)
		}
		if err == nil {
			err = pc.Start(ctx)
		}
		if err != nil {
			co.close()
			return nil, err
		}
		co.cs = append(co.cs, pc)
	}
	return co, nil
}

// subscribe gives pc its queues: mine, unfiltered, or with c.SQL92 every
// topic of the workload under that condition, shared by the rebalance.
func subscribe(pc *client.PullConsumer, c *Config, mine []client.MessageQueue) error {
	if c.SQL92 == "" {
		return pc.Assign(mine...)
	}
	for _, t := range c.topics() {
		if err := pc.SubscribeSelector(t, client.SQL92(c.SQL92)); err != nil {
			return err
		}
	}
	return nil
}

func (co *consumers) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, pc := range co.cs {
		_ = pc.Close(ctx)
	}
	if co.push != nil {
		_ = co.push.Close(ctx)
	}
}

// errIdle ends a consume whose backlog ran out before the count.
var errIdle = errors.New("bench: no message arrived for the idle timeout: the backlog is shorter than asked")

// run polls every consumer until want messages arrived in all (0: until
// ctx is done) or, with idle > 0, none arrived for idle (it then returns
// errIdle).
func (co *consumers) run(ctx context.Context, want uint64, idle time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var idled atomic.Bool
	if idle > 0 {
		go func() {
			last, lastAt := co.got.Load(), time.Now()
			t := time.NewTicker(idle / 10)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-t.C:
					if n := co.got.Load(); n != last {
						last, lastAt = n, now
					} else if now.Sub(lastAt) >= idle {
						idled.Store(true)
						cancel()
						return
					}
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for _, pc := range co.cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				msgs, err := pc.Poll(ctx)
				if err != nil {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
						co.errs.Add(1)
						co.first.set(err)
					}
					continue
				}
				now := time.Now()
				var b uint64
				for _, m := range msgs {
					b += uint64(len(m.Body))
					if co.stamp && len(m.Body) >= 8 {
						co.hist.Record(now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(m.Body)))))
					}
				}
				co.bytes.Add(b)
				co.last.Store(now.UnixNano())
				if co.got.Add(uint64(len(msgs))) >= want && want > 0 {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if idled.Load() {
		return errIdle
	}
	return nil
}

// Consume runs the consume workload: c.Clients pull consumers of a fresh
// group read c.Msgs messages (or for c.Duration) of c.Topic's backlog from
// the first offset of every queue, as fast as they can. The backlog must
// be there already (produce it first).
func Consume(ctx context.Context, c Config) (*Result, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	qs, err := prepareTopics(ctx, &c)
	if err != nil {
		return nil, err
	}
	if c.Msgs == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Duration)
		defer cancel()
	}
	start := time.Now()
	co, err := startConsumers(ctx, &c, qs, false)
	if err != nil {
		return nil, err
	}
	defer co.close()
	prog := StartProgress(c.Progress, "consume", uint64(c.Msgs), &co.got)
	idleErr := co.run(ctx, uint64(c.Msgs), c.Idle)
	elapsed := time.Since(start)
	prog.Stop()
	if idleErr != nil {
		elapsed = time.Unix(0, co.last.Load()).Sub(start) // the rate is over the time messages arrived
	}
	err = errors.Join(ctx.Err(), idleErr)
	if c.Msgs == 0 && errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	mode := "pull"
	if c.SQL92 != "" {
		mode = "pull-sql92"
	}
	return &Result{Workload: "consume", Mode: mode, Size: c.Size, Clients: len(co.cs), Queues: len(qs),
		Msgs: co.got.Load(), Bytes: co.bytes.Load(), Errors: co.errs.Load(), FirstError: co.first.get(), Elapsed: elapsed}, err
}

// E2E runs producers and consumers at once on c.Topic: the producers send
// as in Produce with the send time in each body, pull consumers of a fresh
// group read from the first offset, and the latency is from the send call
// to the consumer's Poll returning the message. Use a topic without an
// older backlog, or its messages count too (with huge latencies).
func E2E(ctx context.Context, c Config) (*Result, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	qs, err := prepareTopics(ctx, &c)
	if err != nil {
		return nil, err
	}
	var co *consumers
	if c.Push {
		co, err = startPush(ctx, &c)
	} else {
		co, err = startConsumers(ctx, &c, qs, true)
	}
	if err != nil {
		return nil, err
	}
	defer co.close()
	pr, err := startProducers(ctx, &c, true)
	if err != nil {
		return nil, err
	}
	defer pr.close()
	prog := StartProgress(c.Progress, "e2e", uint64(c.Msgs), &co.got)
	start := time.Now()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumed := make(chan struct{})
	go func() {
		if c.Push {
			<-cctx.Done() // the push consumer's handler counts
		} else {
			_ = co.run(cctx, 0, 0)
		}
		close(consumed)
	}()
	pr.run(ctx)
	// Wait for what was acknowledged to arrive, for at most c.Idle more.
	for wait := time.Now().Add(c.Idle); co.got.Load() < pr.acked.Load() && time.Now().Before(wait) && ctx.Err() == nil; {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	cancel()
	<-consumed
	prog.Stop()
	mode := c.Mode
	if c.Push {
		mode += "-push"
	}
	return &Result{Workload: "e2e", Mode: mode, Size: c.Size, Clients: c.Clients, Queues: len(qs),
		Msgs: co.got.Load(), Bytes: co.bytes.Load(), Errors: pr.errs.Load() + co.errs.Load(), FirstError: errors.Join(pr.first.get(), co.first.get()), Elapsed: elapsed, Latency: co.hist}, ctx.Err()
}
