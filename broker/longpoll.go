package broker

import (
	"context"
	"time"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

// pullHeld reads the queue and, when the pull may be suspended and found
// nothing, holds it until the queue grows (then reads again), its timeout
// passes, the broker stops or the connection closes (then answers what a
// last read finds). Each held pull occupies only its own handler
// goroutine and no place in its connection's limit of running handlers,
// so other requests on the connection proceed.
func (b *Broker) pullHeld(ctx context.Context, pr pullRequest, sub *subscription) pullResult {
	hold := pr.sysFlag&pullFlagSuspend != 0 && pr.suspend > 0
	wake := b.cfg.LongPollingEnabled
	limit := min(pr.suspend, maxSuspend)
	if !wake {
		limit = min(limit, shortPoll)
	}
	key := dledger.QueueKey{Topic: pr.topic, QueueID: pr.queueID}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var arrived <-chan struct{}
		if hold && wake {
			// Taken before the read, so an append between the read and
			// the wait still wakes it.
			arrived = b.sinks.arrival.wait(key)
		}
		res := b.readQueue(pr.topic, pr.queueID, pr.queueOffset, pr.maxMsgNums, sub)
		if !hold || res.code != remoting.ResPullNotFound {
			return res
		}
		if timer == nil {
			timer = time.NewTimer(limit)
			b.heldPulls.Add(1)
			defer b.heldPulls.Add(-1)
			// A held pull waits for an event, not for work: it leaves its
			// connection's place for other requests (one pull per queue
			// may be held on one connection, whatever the queue count).
			remoting.Park(ctx)
		}
		select {
		case <-arrived:
		case <-timer.C:
			hold = false
		case <-b.stop:
			hold = false
		case <-ctx.Done():
			hold = false
		}
	}
}

// HeldPulls returns how many pulls this node is holding (tests, metrics).
func (b *Broker) HeldPulls() int64 { return b.heldPulls.Load() }
