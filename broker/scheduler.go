package broker

// What the delay-level and timer schedulers share: reading a parked
// record back for its real queue, and committing a delivery together with
// the progress past it.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/store"
)

// idlePoll re-reads an idle parking queue even without a wake-up.
const idlePoll = time.Second

// scheduled is the machinery of the leader's schedulers.
type scheduled struct {
	rep     *replica
	store   *store.Store
	meta    *meta.State
	records *recordBuilder
	log     hclog.Logger
	// delivered counts delayed and timer messages delivered as leader.
	delivered atomic.Int64
}

// rebuildDue reads one parked record and rebuilds it for its real topic and
// queue: DELAY and timer properties removed, others kept. A record
// retention removed, or one without a real topic, is skipped (nil).
func (s *scheduled) rebuildDue(e store.Entry) (*dledger.Message, error) {
	rec, err := s.store.ReadMessage(e.CommitOffset, int(e.Size))
	if errors.Is(err, store.ErrRemoved) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: reading parked message at %d: %w", e.CommitOffset, err)
	}
	m, _, err := message.DecodeExt(rec)
	if err != nil {
		return nil, fmt.Errorf("broker: decoding parked message at %d: %w", e.CommitOffset, err)
	}
	topic := m.Property(message.PropertyRealTopic)
	qid, qerr := strconv.Atoi(m.Property(message.PropertyRealQueueID))
	if topic == "" || qerr != nil || qid < 0 {
		s.log.Warn("parked message has no real queue; dropped", "commit_offset", e.CommitOffset, "real_topic", topic)
		return nil, nil
	}
	m.RemoveProperty(message.PropertyDelayLevel)
	m.RemoveProperty(message.PropertyTimerDeliverMS)
	m.RemoveProperty(message.PropertyTimerDelaySec)
	m.Topic, m.QueueID, m.StoreTimestamp = topic, int32(qid), 0
	dm, err := s.records.stored(m)
	if err != nil {
		return nil, fmt.Errorf("broker: rebuilding parked message at %d: %w", e.CommitOffset, err)
	}
	return &dm, nil
}

// deliver commits msgs and the progress command as one entry of term.
func (s *scheduled) deliver(ctx context.Context, term uint64, msgs []dledger.Message, progress dledger.Command) error {
	cmd := dledger.Command(&dledger.PutMessagesCommand{Messages: msgs, With: []dledger.Command{progress}, Term: term})
	if len(msgs) == 0 {
		// Only skipped records: nothing to duplicate, progress alone.
		cmd = progress
	}
	if _, err := s.rep.propose(ctx, cmd); err != nil {
		return err
	}
	s.delivered.Add(int64(len(msgs)))
	return nil
}

// waitFor sleeps d (idlePoll when d <= 0) or until grown closes or ctx ends.
func waitFor(ctx context.Context, grown <-chan struct{}, d time.Duration) {
	if d <= 0 {
		d = idlePoll
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-grown:
	case <-ctx.Done():
	}
}
