package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// The orderly topic and the properties that identify a message.
const (
	topic     = "ChaosOrder"
	queues    = 8
	propKey   = "ck" // the ordering key ("s3": SDK key 3, "o1": official key 1)
	propSeq   = "cs" // the key's sequence number, from 1
	sdkKeys   = 6
	offKeys   = 3
	delayKeys = 1                    // our SDK's keys whose messages wait delay level 1 (1 s)
	sendPause = 5 * time.Millisecond // per sender between sends: load, not a flood
)

// msgID names a message by its key and sequence number.
func msgID(key string, seq int) string { return key + "/" + strconv.Itoa(seq) }

// ledger records every acknowledged send and when our SDK's were answered.
type ledger struct {
	mu      sync.Mutex
	acked   map[string]bool
	sdkAcks []time.Time // in order
	sdk     int
	// failed counts sends answered with an error, by client.
	failed, sdkFailed atomic.Int64
}

func newLedger() *ledger { return &ledger{acked: map[string]bool{}} }

// ack records an acknowledged send; sdk marks raftmq's SDK.
func (l *ledger) ack(id string, sdk bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked[id] = true
	if sdk {
		l.sdk++
		l.sdkAcks = append(l.sdkAcks, time.Now())
	}
}

// sdkCount is how many of our SDK's sends were acknowledged.
func (l *ledger) sdkCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sdk
}

// snapshot copies the acknowledged ids and our SDK's acknowledgement times.
func (l *ledger) snapshot() (map[string]bool, []time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	acked := make(map[string]bool, len(l.acked))
	for k := range l.acked {
		acked[k] = true
	}
	return acked, append([]time.Time(nil), l.sdkAcks...)
}

// load is the producers: one goroutine per key, each sending its key's
// messages one at a time in sequence (the next only after the previous
// was answered), so the stored order of a key's acknowledged messages
// must be its sequence order.
type load struct {
	stop chan struct{}
	wg   sync.WaitGroup
}

// startLoad starts our SDK's and the official client's senders.
func startLoad(t *testing.T, ns string, l *ledger) *load {
	t.Helper()
	ld := &load{stop: make(chan struct{})}
	sdk, err := client.NewProducer("chaos-sdk-producer", client.WithNameServers(ns),
		client.WithSelector(client.HashSelector(nil))) // the default send timeout, 3 s
	if err != nil {
		t.Fatal(err)
	}
	if err := sdk.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	off := newOfficialProducer(t, ns)
	for k := range sdkKeys {
		ld.run(fmt.Sprintf("s%d", k), l, sdkSender(sdk, 0), true)
	}
	for k := range delayKeys {
		ld.run(fmt.Sprintf("d%d", k), l, sdkSender(sdk, 1), true)
	}
	for k := range offKeys {
		ld.run(fmt.Sprintf("o%d", k), l, func(key string, seq int) error {
			m := primitive.NewMessage(topic, []byte(msgID(key, seq)))
			m.WithShardingKey(key)
			m.WithProperty(propKey, key)
			m.WithProperty(propSeq, strconv.Itoa(seq))
			res, err := off.SendSync(context.Background(), m)
			if err == nil && res.Status != primitive.SendOK {
				err = fmt.Errorf("official send status %d", res.Status)
			}
			return err
		}, false)
	}
	t.Cleanup(func() {
		ld.halt()
		_ = sdk.Close(context.Background())
		_ = off.Shutdown()
	})
	return ld
}

// sdkSender sends a key's messages with our SDK, at delayLevel when not 0.
func sdkSender(sdk *client.Producer, delayLevel int) func(key string, seq int) error {
	return func(key string, seq int) error {
		m := &message.Message{Topic: topic, Body: []byte(msgID(key, seq))}
		m.SetKeys([]string{key})
		m.SetProperty(message.PropertyShardingKey, key)
		m.SetProperty(propKey, key)
		m.SetProperty(propSeq, strconv.Itoa(seq))
		if delayLevel > 0 {
			m.SetDelayLevel(delayLevel)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := sdk.Send(ctx, m)
		return err
	}
}

// run starts one key's sender.
func (ld *load) run(key string, l *ledger, send func(key string, seq int) error, sdk bool) {
	ld.wg.Add(1)
	go func() {
		defer ld.wg.Done()
		for seq := 1; ; seq++ {
			select {
			case <-ld.stop:
				return
			case <-time.After(sendPause):
			}
			if err := send(key, seq); err != nil {
				l.failed.Add(1)
				if sdk {
					l.sdkFailed.Add(1)
				}
				continue
			}
			l.ack(msgID(key, seq), sdk)
		}
	}()
}

// halt stops the senders and waits for their last sends (idempotent).
func (ld *load) halt() {
	select {
	case <-ld.stop:
	default:
		close(ld.stop)
	}
	ld.wg.Wait()
}

// newOfficialProducer is the official client's producer with its hash
// selector (the SHARDING_KEY picks the queue).
func newOfficialProducer(t *testing.T, ns string) rocketmq.Producer {
	t.Helper()
	rlog.SetLogLevel("fatal") // its reconnect errors are the faults themselves
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("chaos-official-producer"),
		producer.WithInstanceName(fmt.Sprintf("chaos-%d", time.Now().UnixNano())),
		producer.WithQueueSelector(producer.NewHashQueueSelector()),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(3*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}
