package client

// RESET_CONSUMER_CLIENT_OFFSET (220): an administrator reset the group's
// offsets of a topic (INVOKE_BROKER_TO_RESET_OFFSET); the broker has
// committed them and sends the table to every consumer of the group. Each
// assigned queue of the table restarts its pull loop at the new offset,
// its process queue dropped without committing the old offset over the
// reset.

import (
	"context"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

func (gm *groupMember) onResetOffset(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.ExtFields["group"] != gm.cfg.group {
		return nil
	}
	var body protocol.ResetOffsetBody
	if err := protocol.UnmarshalFastJSON(req.Body, &body); err != nil {
		gm.c.log.Warn("reset offset: bad body", "error", err)
		return nil
	}
	topic := req.ExtFields["topic"]
	go gm.resetQueues(topic, body.OffsetTable)
	return nil
}

// resetQueues restarts the assigned queues of table at its offsets.
func (gm *groupMember) resetQueues(topic string, table protocol.MQMap[int64]) {
	gm.mu.Lock()
	if gm.closed {
		gm.mu.Unlock()
		return
	}
	var old []*queueState
	for mq, qs := range gm.queues {
		if _, ok := table[protocol.MessageQueue(mq)]; ok && mq.Topic == topic {
			old = append(old, qs)
			delete(gm.queues, mq)
		}
	}
	gm.mu.Unlock()
	for _, qs := range old {
		qs.cancel()
		qs.pq.drop()
	}
	for _, qs := range old {
		<-qs.done
	}
	gm.mu.Lock()
	defer gm.mu.Unlock()
	for _, qs := range old {
		if _, taken := gm.queues[qs.mq]; taken || gm.closed {
			continue
		}
		off := table[protocol.MessageQueue(qs.mq)]
		nqs := gm.startQueue(qs.mq, off, qs.epoch)
		nqs.lockedAt.Store(qs.lockedAt.Load())
		gm.queues[qs.mq] = nqs
		gm.c.log.Info("offset reset by the broker", "queue", qs.mq, "offset", off)
	}
}
