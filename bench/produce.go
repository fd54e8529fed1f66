package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// producers is a started set of producers and what they counted.
type producers struct {
	cfg    *Config
	ps     []*client.Producer
	txps   []*client.TransactionProducer // ModeTxn: instead of ps
	body   []byte
	topics []string
	stamp  bool // put the send time (unix ns) in the first 8 body bytes
	hist   *Histogram
	acked  atomic.Uint64
	errs   atomic.Uint64
	first  firstError
	seq    atomic.Int64 // messages built, numbering them for Config.Props
}

// firstError keeps the first error reported to it.
type firstError struct {
	once sync.Once
	err  error
}

func (f *firstError) set(err error) { f.once.Do(func() { f.err = err }) }

// get is the first error; call it after the workload's goroutines ended.
func (f *firstError) get() error {
	f.once.Do(func() {})
	return f.err
}

func startProducers(ctx context.Context, c *Config, stamp bool) (*producers, error) {
	pr := &producers{cfg: c, body: payload(c.Size), topics: c.topics(), stamp: stamp, hist: NewHistogram()}
	if c.Mode == ModeTxn {
		return pr, pr.startTxn(ctx)
	}
	for i := range c.Clients {
		p, err := client.NewProducer("raftmq-bench-producer", client.WithNameServers(c.NameServers...), client.WithCredentials(c.Credentials), client.WithTLS(c.TLS),
			client.WithInstanceName(instance("producer", i)),
			client.WithCompressThreshold(1<<30))
		if err == nil {
			err = p.Start(ctx)
		}
		if err != nil {
			pr.close()
			return nil, err
		}
		pr.ps = append(pr.ps, p)
	}
	return pr, nil
}

func (pr *producers) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range pr.ps {
		_ = p.Close(ctx)
	}
	for _, p := range pr.txps {
		_ = p.Close(ctx)
	}
}

// startTxn starts c.Clients transaction producers whose local
// transaction commits.
func (pr *producers) startTxn(ctx context.Context) error {
	commit := func(context.Context, *message.Message, any) client.TransactionState { return client.CommitTransaction }
	check := func(context.Context, *message.MessageExt) client.TransactionState { return client.CommitTransaction }
	for i := range pr.cfg.Clients {
		p, err := client.NewTransactionProducer("raftmq-bench-txn-producer", commit, check,
			client.WithNameServers(pr.cfg.NameServers...), client.WithCredentials(pr.cfg.Credentials), client.WithTLS(pr.cfg.TLS), client.WithInstanceName(instance("txn-producer", i)),
			client.WithCompressThreshold(1<<30))
		if err == nil {
			err = p.Start(ctx)
		}
		if err != nil {
			pr.close()
			return err
		}
		pr.txps = append(pr.txps, p)
	}
	return nil
}

// msg is a new message of the workload for its k-th topic (mod their
// count), stamped with now if asked.
func (pr *producers) msg(k int, now time.Time) *message.Message {
	body := pr.body
	seq := pr.seq.Add(1) - 1
	if pr.stamp {
		body = append([]byte(nil), pr.body...)
		binary.BigEndian.PutUint64(body, uint64(now.UnixNano()))
	}
	m := newMessage(pr.topics[k%len(pr.topics)], body)
	if pr.cfg.Props {
		m.SetProperty("n", strconv.FormatInt(seq%10, 10))
		m.SetTags("t" + strconv.FormatInt(seq%4, 10))
	}
	return m
}

// run sends with every producer until each sent its share or the duration
// ends, and returns when every send is answered.
func (pr *producers) run(ctx context.Context) {
	c := pr.cfg
	var deadline time.Time
	if c.Msgs == 0 {
		deadline = time.Now().Add(c.Duration)
	}
	var wg sync.WaitGroup
	for i := range c.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.Mode == ModeTxn {
				pr.txnClient(ctx, pr.txps[i], i, c.share(i), deadline)
				return
			}
			pr.client(ctx, pr.ps[i], i, c.share(i), deadline)
		}()
	}
	wg.Wait()
}

// txnClient sends its share, each message in a committed transaction;
// the latency is the half message's send, the local transaction and the
// commit's departure (END_TRANSACTION is oneway, as RocketMQ's).
func (pr *producers) txnClient(ctx context.Context, p *client.TransactionProducer, id, n int, deadline time.Time) {
	pace := newPacer(pr.cfg)
	for sent := 0; more(ctx, sent, n, deadline); sent++ {
		pace.wait(ctx, sent)
		t0 := time.Now()
		res, err := p.SendMessageInTransaction(ctx, pr.msg(id+sent, t0), nil)
		if err == nil && res.EndErr != nil {
			err = res.EndErr
		}
		if err == nil && res.State != client.CommitTransaction {
			err = fmt.Errorf("bench: transaction ended %v, want commit", res.State)
		}
		pr.done(ctx, t0, 1, err)
	}
}

// more reports whether a client that sent sent messages of its share n
// goes on.
func more(ctx context.Context, sent, n int, deadline time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	if n > 0 {
		return sent < n
	}
	return time.Now().Before(deadline)
}

// pacer spaces one client's sends to its share of Config.Rate.
type pacer struct {
	start    time.Time
	interval time.Duration // 0: no pacing
}

func newPacer(c *Config) pacer {
	if c.Rate <= 0 {
		return pacer{}
	}
	return pacer{start: time.Now(), interval: time.Second * time.Duration(c.Clients) / time.Duration(c.Rate)}
}

// wait returns when the client may send its message number sent.
func (p pacer) wait(ctx context.Context, sent int) {
	if p.interval == 0 {
		return
	}
	if d := time.Until(p.start.Add(time.Duration(sent) * p.interval)); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

func (pr *producers) client(ctx context.Context, p *client.Producer, id, n int, deadline time.Time) {
	c := pr.cfg
	pace := newPacer(c)
	switch c.Mode {
	case ModeSync:
		for sent := 0; more(ctx, sent, n, deadline); sent++ {
			pace.wait(ctx, sent)
			t0 := time.Now()
			_, err := p.Send(ctx, pr.msg(id+sent, t0))
			pr.done(ctx, t0, 1, err)
		}
	case ModeBatch:
		for sent := 0; more(ctx, sent, n, deadline); {
			k := c.Batch
			if n > 0 {
				k = min(k, n-sent)
			}
			pace.wait(ctx, sent)
			t0 := time.Now()
			msgs := make([]*message.Message, k)
			for j := range msgs {
				msgs[j] = pr.msg(id+sent/c.Batch, t0) // a batch is of one topic
			}
			_, err := p.SendBatch(ctx, msgs)
			pr.done(ctx, t0, k, err)
			sent += k
		}
	default: // async
		slots := make(chan struct{}, c.InFlight)
		var wg sync.WaitGroup
		for sent := 0; more(ctx, sent, n, deadline); sent++ {
			pace.wait(ctx, sent)
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				continue
			}
			wg.Add(1)
			t0 := time.Now()
			p.SendAsync(ctx, pr.msg(id+sent, t0), func(_ client.SendResult, err error) {
				pr.done(ctx, t0, 1, err)
				<-slots
				wg.Done()
			})
		}
		wg.Wait()
	}
}

// done counts k messages sent at t0 and answered now with err. Sends cut
// short because the run itself was stopped (ctx canceled: Ctrl-C) count
// neither as acknowledged nor as errors.
func (pr *producers) done(ctx context.Context, t0 time.Time, k int, err error) {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return
	}
	if err != nil {
		pr.errs.Add(uint64(k))
		pr.first.set(err)
		return
	}
	pr.hist.RecordN(time.Since(t0), uint64(k))
	pr.acked.Add(uint64(k))
}

// Produce runs the produce workload: c.Clients producers send c.Size-byte
// messages to c.Topic in c.Mode; the latency is each message's ack latency
// (for a batch, the batch's).
func Produce(ctx context.Context, c Config) (*Result, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	qs, err := prepareTopics(ctx, &c)
	if err != nil {
		return nil, err
	}
	pr, err := startProducers(ctx, &c, false)
	if err != nil {
		return nil, err
	}
	defer pr.close()
	prog := StartProgress(c.Progress, "produce", uint64(c.Msgs), &pr.acked)
	start := time.Now()
	pr.run(ctx)
	elapsed := time.Since(start)
	prog.Stop()
	n := pr.acked.Load()
	return &Result{Workload: "produce", Mode: c.Mode, Size: c.Size, Clients: c.Clients, Queues: len(qs),
		Msgs: n, Bytes: n * uint64(c.Size), Errors: pr.errs.Load(), FirstError: pr.first.get(), Elapsed: elapsed, Latency: pr.hist}, ctx.Err()
}
