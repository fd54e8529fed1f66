package broker

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/remoting"
)

// Offset commit coalescing: clients report every queue's offset every 5 s,
// oneway. Each node gathers the reports into a table keeping the newest
// value per (group, topic, queue) and writes the table as one
// CommitOffsetsCommand at most every offsetFlushInterval (sooner once
// offsetFlushCount are pending). A follower sends its table to the leader
// as one UPDATE_CONSUMER_OFFSET request marked extOffsetBatch whose body is
// an offsetBatch (a raftmq extension); the leader proposes it and answers
// once it is committed. A table that fails to commit is merged back under
// any newer value and retried at the next flush.
//
// A retried value may be stale by the time it lands: the consumer may have
// moved to another node (a failover) and committed further there. Retried
// entries are marked (batchOffset.Retry), and the leader — after its
// term's barrier, so it sees every committed offset — drops a marked entry
// that would move a committed offset backwards. Fresh entries are applied
// as given: a consumer may commit a lower offset on purpose, as RocketMQ
// allows.
const (
	offsetFlushInterval = 100 * time.Millisecond
	offsetFlushCount    = 1024
	// offsetMaxPerEntry bounds the offsets of one raft entry.
	offsetMaxPerEntry = 4096
	// offsetFinalFlush bounds the last flush at shutdown.
	offsetFinalFlush = 2 * time.Second
	// extOffsetBatch marks a forwarded batch of offsets (raftmq extension).
	extOffsetBatch = "raftmqOffsetBatch"
)

// offsetBatch is the body of a forwarded batch.
type offsetBatch struct {
	Offsets []batchOffset `json:"offsets"`
}

type batchOffset struct {
	Group   string `json:"group"`
	Topic   string `json:"topic"`
	QueueID int32  `json:"queueId"`
	Offset  int64  `json:"offset"`
	// Retry marks a value that failed to commit before: it must not move
	// a committed offset backwards.
	Retry bool `json:"retry,omitempty"`
}

// offsetCommitter is the node's table of offsets waiting to be committed.
type offsetCommitter struct {
	rep          *replica
	meta         *meta.State
	flushTimeout time.Duration
	log          hclog.Logger

	mu      sync.Mutex
	pending map[meta.OffsetKey]int64
	retried map[meta.OffsetKey]bool // pending values that failed to commit once
	// inflight holds the values of the flush under way: taken from pending
	// but not yet applied, so lookup still finds them.
	inflight map[meta.OffsetKey]int64
	kick     chan struct{}
	// flushes counts the batches written or forwarded (tests, metrics).
	flushes atomic.Int64
	failing bool // only run's goroutine touches it
}

func newOffsetCommitter(rep *replica, st *meta.State, flushTimeout time.Duration, log hclog.Logger) *offsetCommitter {
	return &offsetCommitter{rep: rep, meta: st, flushTimeout: flushTimeout, log: log,
		pending: map[meta.OffsetKey]int64{}, retried: map[meta.OffsetKey]bool{}, inflight: map[meta.OffsetKey]int64{},
		kick: make(chan struct{}, 1)}
}

// update records an offset to commit; it never blocks.
func (o *offsetCommitter) update(k meta.OffsetKey, off int64) {
	o.mu.Lock()
	o.pending[k] = off
	delete(o.retried, k)
	n := len(o.pending)
	o.mu.Unlock()
	if n >= offsetFlushCount {
		select {
		case o.kick <- struct{}{}:
		default:
		}
	}
}

// lookup returns an offset that is pending on this node, or being
// committed: between take and settle a value is in neither pending nor
// the applied state, and a query must not fall back to an older one.
func (o *offsetCommitter) lookup(k meta.OffsetKey) (int64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if off, ok := o.pending[k]; ok {
		return off, true
	}
	off, ok := o.inflight[k]
	return off, ok
}

// snapshot is every offset pending or being committed on this node.
func (o *offsetCommitter) snapshot() map[meta.OffsetKey]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[meta.OffsetKey]int64, len(o.pending)+len(o.inflight))
	maps.Copy(out, o.inflight)
	maps.Copy(out, o.pending)
	return out
}

// run flushes until stop, then once more.
func (o *offsetCommitter) run(stop <-chan struct{}) {
	t := time.NewTicker(offsetFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), offsetFinalFlush)
			o.flush(ctx)
			cancel()
			return
		case <-t.C:
		case <-o.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.flushTimeout)
		o.flush(ctx)
		cancel()
	}
}

// pendingOffset is a value to commit and whether it is a retry.
type pendingOffset struct {
	meta.ConsumerOffset
	retry bool
}

func (o *offsetCommitter) take() []pendingOffset {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) == 0 {
		return nil
	}
	out := make([]pendingOffset, 0, len(o.pending))
	for k, v := range o.pending {
		out = append(out, pendingOffset{meta.ConsumerOffset{OffsetKey: k, Offset: v}, o.retried[k]})
		o.inflight[k] = v
	}
	clear(o.pending)
	clear(o.retried)
	return out
}

// settle ends a flush of offs: committed (and so in the applied state) or
// requeued.
func (o *offsetCommitter) settle(offs []pendingOffset) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range offs {
		if v, ok := o.inflight[c.OffsetKey]; ok && v == c.Offset {
			delete(o.inflight, c.OffsetKey)
		}
	}
}

// requeue puts offsets that failed to commit back, unless a newer value
// arrived meanwhile.
func (o *offsetCommitter) requeue(offs []pendingOffset) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range offs {
		if _, newer := o.pending[c.OffsetKey]; !newer {
			o.pending[c.OffsetKey] = c.Offset
			o.retried[c.OffsetKey] = true
		}
	}
}

func (o *offsetCommitter) flush(ctx context.Context) {
	offs := o.take()
	if len(offs) == 0 {
		return
	}
	defer o.settle(offs)
	slices.SortFunc(offs, func(a, b pendingOffset) int { return a.OffsetKey.Compare(b.OffsetKey) })
	for len(offs) > 0 {
		n := min(len(offs), offsetMaxPerEntry)
		part := offs[:n]
		offs = offs[n:]
		o.flushes.Add(1)
		if err := o.commit(ctx, part); err != nil {
			if !o.failing {
				o.log.Warn("committing consumer offsets failed; retrying at each flush", "offsets", len(part), "error", err)
			}
			o.failing = true
			o.requeue(part)
			o.requeue(offs)
			return
		}
		if o.failing {
			o.log.Info("committing consumer offsets works again")
			o.failing = false
		}
	}
}

// commit writes offs through the group: proposed here on the leader,
// forwarded as one batch otherwise.
func (o *offsetCommitter) commit(ctx context.Context, offs []pendingOffset) error {
	if o.rep.isLeader() {
		err := o.propose(ctx, offs)
		var nl *dledger.NotLeaderError
		if !errors.As(err, &nl) && !errors.Is(err, errNotLeaderTerm) {
			return err
		}
	}
	batch := offsetBatch{Offsets: make([]batchOffset, len(offs))}
	for i, c := range offs {
		batch.Offsets[i] = batchOffset{Group: c.Group, Topic: c.Topic, QueueID: c.QueueID, Offset: c.Offset, Retry: c.retry}
	}
	body, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	req := remoting.NewRequest(remoting.ReqUpdateConsumerOffset, map[string]string{extOffsetBatch: "true"}, body)
	resp := o.rep.forward(ctx, req)
	if resp.Code != remoting.ResSuccess {
		return errors.New("leader answered " + remoting.ResponseCodeName(resp.Code) + ": " + resp.Remark)
	}
	return nil
}

// propose commits offs on the leader, without the retried values that
// would move a committed offset backwards.
func (o *offsetCommitter) propose(ctx context.Context, offs []pendingOffset) error {
	keep := make([]meta.ConsumerOffset, 0, len(offs))
	checked := false
	for _, c := range offs {
		if c.retry {
			if !checked {
				if _, err := o.rep.ready(ctx); err != nil {
					return err
				}
				checked = true
			}
			if cur, ok := o.meta.ConsumerOffset(c.OffsetKey); ok && c.Offset < cur {
				o.log.Info("dropped a stale retried offset commit", "group", c.Group, "topic", c.Topic, "queue", c.QueueID,
					"offset", c.Offset, "committed", cur)
				continue
			}
		}
		keep = append(keep, c.ConsumerOffset)
	}
	if len(keep) == 0 {
		return nil
	}
	_, err := o.rep.propose(ctx, &meta.CommitOffsetsCommand{Offsets: keep})
	return err
}

// commitForwarded is the leader's side of a forwarded batch: propose it
// and answer when it is committed.
func (o *offsetCommitter) commitForwarded(ctx context.Context, req *remoting.Command) *remoting.Command {
	var batch offsetBatch
	if err := json.Unmarshal(req.Body, &batch); err != nil {
		return errResponse(req, remoting.ResSystemError, "offset batch body is not valid JSON: %v", err)
	}
	if len(batch.Offsets) > offsetMaxPerEntry {
		return errResponse(req, remoting.ResSystemError, "offset batch of %d offsets, limit %d", len(batch.Offsets), offsetMaxPerEntry)
	}
	offs := make([]pendingOffset, len(batch.Offsets))
	for i, c := range batch.Offsets {
		offs[i] = pendingOffset{meta.ConsumerOffset{OffsetKey: meta.OffsetKey{Group: c.Group, Topic: c.Topic, QueueID: c.QueueID}, Offset: c.Offset}, c.Retry}
	}
	ctx, cancel := context.WithTimeout(ctx, o.flushTimeout)
	defer cancel()
	if err := o.propose(ctx, offs); err != nil {
		return o.rep.proposeFailure(ctx, req, err)
	}
	return okResponse(req)
}

// reset commits offs as an administrator's reset: values pending here for
// the same queues are dropped first, so a flush cannot put an older
// offset back over the reset.
func (o *offsetCommitter) reset(ctx context.Context, offs []meta.ConsumerOffset) error {
	o.mu.Lock()
	for _, c := range offs {
		delete(o.pending, c.OffsetKey)
		delete(o.retried, c.OffsetKey)
	}
	o.mu.Unlock()
	for len(offs) > 0 {
		n := min(len(offs), offsetMaxPerEntry)
		if _, err := o.rep.propose(ctx, &meta.CommitOffsetsCommand{Offsets: offs[:n]}); err != nil {
			return err
		}
		offs = offs[n:]
	}
	return nil
}
