package dledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/message"
)

// Result is what a committed proposal returns.
type Result struct {
	// Index is the raft index of the entry holding the proposal.
	Index uint64
	// Messages has, for a PutMessagesCommand, the assigned offsets of its
	// messages in order.
	Messages []MessageResult
}

// MessageResult is where the leader put one message.
type MessageResult struct {
	QueueOffset    int64
	CommitOffset   int64
	StoreTimestamp int64
}

type proposal struct {
	ctx context.Context
	cmd Command
	// ctrl, when set, runs on the proposer goroutine with nothing in
	// flight (leadership transfer), instead of proposing cmd.
	ctrl   func() error
	msgs   int
	bytes  int
	seq    uint64
	result Result
	done   chan error
}

// epoch is one leadership term's offset counters. They were loaded from
// applied state after a barrier in that term and are advanced at
// coalescing time, so message order in the log is offset order.
type epoch struct {
	term       uint64
	queueNext  map[QueueKey]int64
	commitNext int64
	dead       atomic.Bool // a proposal of this epoch failed; counters unusable
}

// completion records an entry's answer for fill's expectation.
type completion struct {
	answered int
	seq      uint64        // proposals with a lower seq were queued before it
	round    time.Duration // from the entry's proposal to its answer
}

type inflight struct {
	at    time.Time // proposed
	f     raft.ApplyFuture
	batch []*proposal
	ep    *epoch
}

// proposer is the leader's group-commit pipeline: one goroutine coalesces
// queued proposals into entries, one waits for their futures in order.
type proposer struct {
	n      *Node
	reqs   chan *proposal
	kickCh chan struct{}
	slots  chan struct{}
	futs   chan inflight
	freed  chan struct{} // cap 1: an entry completed and gave back its slot
	wg     sync.WaitGroup

	// seq numbers proposals as they are queued; last is what the latest
	// completed entry answered and the seq at that moment, so fill can
	// tell its callers (who send again at once) from earlier arrivals.
	seq    atomic.Uint64
	last   atomic.Pointer[completion]
	linger *time.Timer // fill's; owned by the run goroutine

	mu sync.Mutex
	ep *epoch // owned by the run goroutine; mu guards cross-goroutine reads
	// open counts in-flight entries; the run goroutine waits for zero
	// before a barrier so it never loads counters under its own proposals.
	open sync.WaitGroup
}

func newProposer(n *Node) *proposer {
	p := &proposer{
		n:      n,
		reqs:   make(chan *proposal, 4*n.cfg.MaxBatchMessages),
		kickCh: make(chan struct{}, 1),
		slots:  make(chan struct{}, n.cfg.MaxInflight),
		futs:   make(chan inflight, n.cfg.MaxInflight),
		freed:  make(chan struct{}, 1),
		linger: time.NewTimer(time.Hour),
	}
	p.linger.Stop()
	p.wg.Add(2)
	go p.run()
	go p.waitLoop()
	return p
}

func (p *proposer) kick() {
	select {
	case p.kickCh <- struct{}{}:
	default:
	}
}

// waitFor waits for the proposer's goroutines to exit, at most d.
func (p *proposer) waitFor(d time.Duration) bool {
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Propose replicates cmd through the group and returns once it is
// committed and applied on this (leader) node. On a follower it returns a
// *NotLeaderError. Concurrent calls are coalesced into one raft entry.
// If ctx ends after the proposal was handed to raft the outcome is unknown
// and ctx's error is returned.
func (n *Node) Propose(ctx context.Context, cmd Command) (Result, error) {
	pr, err := newProposal(ctx, cmd, n.cfg.MaxBatchBytes)
	if err != nil {
		return Result{}, err
	}
	if n.raft.State() != raft.Leader {
		return Result{}, n.notLeader()
	}
	pr.seq = n.prop.seq.Add(1)
	select {
	case n.prop.reqs <- pr:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-n.done:
		return Result{}, ErrClosed
	}
	select {
	case err := <-pr.done:
		return pr.result, err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-n.done:
		return Result{}, ErrClosed
	}
}

// runControl queues fn to run on the proposer goroutine.
func (n *Node) runControl(ctx context.Context, fn func() error) error {
	pr := &proposal{ctx: ctx, ctrl: fn, done: make(chan error, 1)}
	select {
	case n.prop.reqs <- pr:
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return ErrClosed
	}
	select {
	case err := <-pr.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newProposal(ctx context.Context, cmd Command, maxBytes int) (*proposal, error) {
	pr := &proposal{ctx: ctx, cmd: cmd, done: make(chan error, 1)}
	switch c := cmd.(type) {
	case *PutMessagesCommand:
		if err := checkMessages(c.Messages); err != nil {
			return nil, err
		}
		pr.msgs = len(c.Messages)
		for i := range c.Messages {
			pr.bytes += len(c.Messages[i].Record) + len(c.Messages[i].Topic) + 64
		}
	case *CommitOffsetsCommand:
		if len(c.Offsets) == 0 {
			return nil, fmt.Errorf("%w: no offsets", ErrInvalidCommand)
		}
		pr.msgs = len(c.Offsets)
		pr.bytes = 64 * len(c.Offsets)
	case nil:
		return nil, fmt.Errorf("%w: nil command", ErrInvalidCommand)
	default:
		// Encode once now so a bad command fails its caller alone.
		b, err := encodeCommand(cmd)
		if err != nil {
			return nil, err
		}
		pr.bytes = len(b)
	}
	if pr.bytes > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, pr.bytes, maxBytes)
	}
	return pr, nil
}

// checkMessages rejects what would corrupt the offset arithmetic: commit
// offsets advance by len(Record), so it must be the record's TOTALSIZE.
func checkMessages(msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("%w: no messages", ErrInvalidCommand)
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Topic == "" {
			return fmt.Errorf("%w: message %d has no topic", ErrInvalidCommand, i)
		}
		size, err := message.PeekTotalSize(m.Record)
		if err != nil || size != len(m.Record) {
			return fmt.Errorf("%w: message %d: record of %d bytes, TOTALSIZE %d: %v", ErrInvalidCommand, i, len(m.Record), size, err)
		}
	}
	return nil
}

// coalescable reports whether a and b may share one entry.
func coalescable(a, b CommandType) bool {
	return a == b && (a == CmdPutMessages || a == CmdCommitOffsets)
}

func (p *proposer) run() {
	defer p.wg.Done()
	defer close(p.futs)
	var carry *proposal
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-p.reqs:
			case <-p.kickCh:
				p.epoch() // establish eagerly so the first write does not wait
				continue
			case <-p.n.done:
				p.failQueued(ErrClosed)
				return
			}
		}
		if first.ctrl != nil {
			p.control(first)
			continue
		}
		ep, err := p.epoch()
		if err != nil {
			first.done <- err
			p.failQueued(err)
			continue
		}
		select {
		case p.slots <- struct{}{}:
		case <-p.n.done:
			first.done <- ErrClosed
			p.failQueued(ErrClosed)
			return
		}
		var batch []*proposal
		batch, carry = p.collect(first)
		if carry == nil && coalescable(first.cmd.Type(), first.cmd.Type()) {
			batch, carry = p.fill(batch)
		}
		p.propose(ep, batch)
	}
}

// control runs pr.ctrl with no entry in flight. Raft rejects applies while
// a transfer is in progress without appending them; letting later ones
// through afterwards would leave a hole in the term's offsets, so the
// transfer runs alone and the epoch is re-derived after it.
func (p *proposer) control(pr *proposal) {
	p.open.Wait()
	err := pr.ctrl()
	p.mu.Lock()
	if p.ep != nil {
		p.ep.dead.Store(true)
	}
	p.mu.Unlock()
	pr.done <- err
}

// collect takes first plus every queued proposal that can share its entry.
// The slot wait before it is what makes callers pile up: while MaxInflight
// entries are in flight, arrivals queue and then leave in one entry.
func (p *proposer) collect(first *proposal) (batch []*proposal, carry *proposal) {
	batch = []*proposal{first}
	msgs, bytes := first.msgs, first.bytes
	if !coalescable(first.cmd.Type(), first.cmd.Type()) {
		return batch, nil
	}
	for {
		select {
		case pr := <-p.reqs:
			if !p.joins(first, pr, msgs, bytes) {
				return batch, pr
			}
			batch = append(batch, pr)
			msgs, bytes = msgs+pr.msgs, bytes+pr.bytes
		default:
			return batch, nil
		}
	}
}

// joins reports whether pr may share the entry of first, which holds msgs
// messages and bytes bytes so far.
func (p *proposer) joins(first, pr *proposal, msgs, bytes int) bool {
	return pr.ctrl == nil && coalescable(first.cmd.Type(), pr.cmd.Type()) &&
		msgs+pr.msgs <= p.n.cfg.MaxBatchMessages && bytes+pr.bytes <= p.n.cfg.MaxBatchBytes
}

// fill waits for more proposals to share the entry, so that a group
// commit carries what would otherwise take several rounds, each with an
// fsync on every node:
//
//   - while other entries are in flight, a small batch (under
//     PipelineMinMessages and PipelineMinBytes) waits until it is big or
//     until they completed: pipelining pays off for big entries only;
//   - with none in flight, it waits up to Linger for the callers the last
//     entry answered, who send their next message right away, to join
//     those that were already waiting. A lone caller is not delayed: the
//     expected count is reached when it arrives.
func (p *proposer) fill(batch []*proposal) ([]*proposal, *proposal) {
	cfg := &p.n.cfg
	msgs, bytes := 0, 0
	for _, pr := range batch {
		msgs, bytes = msgs+pr.msgs, bytes+pr.bytes
	}
	lingering, expired := false, false
	// Since Go 1.23 a stopped timer delivers no stale value: no drain.
	defer p.linger.Stop()
	for {
		var wake <-chan struct{}
		var timeout <-chan time.Time
		if len(p.slots) > 1 { // others in flight; one slot is ours
			if msgs >= cfg.PipelineMinMessages || bytes >= cfg.PipelineMinBytes {
				return batch, nil
			}
			wake = p.freed
		} else {
			if expired || len(batch) >= p.expected(batch) || cfg.Linger <= 0 {
				return batch, nil
			}
			if !lingering {
				lingering = true
				p.linger.Reset(p.lingerFor())
			}
			timeout = p.linger.C
		}
		select {
		case pr := <-p.reqs:
			if !p.joins(batch[0], pr, msgs, bytes) {
				return batch, pr
			}
			batch = append(batch, pr)
			msgs, bytes = msgs+pr.msgs, bytes+pr.bytes
		case <-wake:
		case <-timeout:
			expired = true
		case <-p.n.done:
			return batch, nil
		}
	}
}

// lingerFor is how long fill waits for callers: Linger, but at most half
// the last round (a caller waiting is worth less than half a round it
// would otherwise wait behind).
func (p *proposer) lingerFor() time.Duration {
	d := p.n.cfg.Linger
	if c := p.last.Load(); c != nil && c.round > 0 {
		d = min(d, c.round/2)
	}
	return d
}

// expected is how many proposals an entry proposed now may expect: the
// callers the last completed entry answered plus the proposals in batch
// that were already queued before that.
func (p *proposer) expected(batch []*proposal) int {
	c := p.last.Load()
	if c == nil {
		return 0
	}
	n := c.answered
	for _, pr := range batch {
		if pr.seq < c.seq {
			n++
		}
	}
	return n
}

func (p *proposer) failQueued(err error) {
	for {
		select {
		case pr := <-p.reqs:
			pr.done <- err
		default:
			return
		}
	}
}

// epoch returns the counters of the current leadership term, running a
// barrier and loading them from applied state when the term is new.
func (p *proposer) epoch() (*epoch, error) {
	r := p.n.raft
	if r.State() != raft.Leader {
		return nil, p.n.notLeader()
	}
	term := r.CurrentTerm()
	p.mu.Lock()
	ep := p.ep
	p.mu.Unlock()
	if ep != nil && !ep.dead.Load() && ep.term == term {
		return ep, nil
	}
	p.open.Wait()
	start := time.Now()
	if err := r.Barrier(0).Error(); err != nil {
		return nil, p.mapErr(err)
	}
	q, c := p.n.fsm.st.counters()
	if r.CurrentTerm() != term || r.State() != raft.Leader {
		return nil, p.n.notLeader()
	}
	ep = &epoch{term: term, queueNext: q, commitNext: c}
	p.mu.Lock()
	p.ep = ep
	p.mu.Unlock()
	p.n.log.Info("leader ready", "term", term, "commit_offset", c, "queues", len(q), "barrier", time.Since(start))
	return ep, nil
}

// propose builds one entry from batch with ep's counters and hands it to
// raft. It owns one slot, released by waitLoop.
func (p *proposer) propose(ep *epoch, batch []*proposal) {
	live := batch[:0]
	for _, pr := range batch {
		if err := pr.ctx.Err(); err != nil {
			pr.done <- err // not yet proposed: safe to drop
			continue
		}
		if c, ok := pr.cmd.(*PutMessagesCommand); ok && c.Term != 0 && c.Term != ep.term {
			pr.done <- fmt.Errorf("%w: pinned to term %d, leader is in term %d", ErrStaleProposal, c.Term, ep.term)
			continue
		}
		live = append(live, pr)
	}
	if len(live) == 0 {
		<-p.slots
		return
	}
	data, err := p.build(ep, live)
	if err != nil {
		for _, pr := range live {
			pr.done <- err
		}
		<-p.slots
		return
	}
	p.open.Add(1)
	// Timeout 0: an enqueue timeout would leave a hole in the counters
	// while later entries proceed.
	f := p.n.raft.Apply(data, 0)
	p.futs <- inflight{at: time.Now(), f: f, batch: live, ep: ep}
}

func (p *proposer) build(ep *epoch, batch []*proposal) ([]byte, error) {
	switch batch[0].cmd.(type) {
	case *PutMessagesCommand:
		return p.buildPut(ep, batch)
	case *CommitOffsetsCommand:
		var all CommitOffsetsCommand
		for _, pr := range batch {
			all.Offsets = append(all.Offsets, pr.cmd.(*CommitOffsetsCommand).Offsets...)
		}
		return encodeCommand(&all)
	default:
		return encodeCommand(batch[0].cmd)
	}
}

// buildPut assigns offsets and stamps them into the records. Offsets are
// committed to ep only when the whole entry encodes, so a failed build
// leaves no hole.
func (p *proposer) buildPut(ep *epoch, batch []*proposal) ([]byte, error) {
	now := time.Now().UnixMilli()
	next := ep.commitNext
	queue := map[QueueKey]int64{}
	var msgs []AppliedMessage
	var recs [][]byte
	var delay []DelayProgress
	for _, pr := range batch {
		c := pr.cmd.(*PutMessagesCommand)
		delay = mergeDelay(delay, c.DelayProgress)
		pr.result.Messages = make([]MessageResult, len(c.Messages))
		for i := range c.Messages {
			m := &c.Messages[i]
			k := QueueKey{m.Topic, m.QueueID}
			qo, ok := queue[k]
			if !ok {
				qo = ep.queueNext[k]
			}
			ts := m.StoreTimestamp
			if ts == 0 {
				ts = now
			}
			if err := stamp(m.Record, qo, next, ts); err != nil {
				return nil, err
			}
			msgs = append(msgs, AppliedMessage{Topic: m.Topic, QueueID: m.QueueID, QueueOffset: qo, CommitOffset: next,
				Size: int32(len(m.Record)), TagsCode: m.TagsCode, StoreTimestamp: ts, Keys: m.Keys})
			recs = append(recs, m.Record)
			pr.result.Messages[i] = MessageResult{QueueOffset: qo, CommitOffset: next, StoreTimestamp: ts}
			queue[k] = qo + 1
			next += int64(len(m.Record))
		}
	}
	data, err := encodePut(ep.term, msgs, delay, recs)
	if err != nil {
		return nil, err
	}
	for k, v := range queue {
		ep.queueNext[k] = v
	}
	ep.commitNext = next
	return data, nil
}

// mergeDelay folds more into acc, later values replacing earlier ones of
// the same queue, keeping first-seen order so the encoding is stable.
func mergeDelay(acc, more []DelayProgress) []DelayProgress {
	for _, d := range more {
		found := false
		for i := range acc {
			if acc[i].QueueID == d.QueueID {
				acc[i].Offset, found = d.Offset, true
			}
		}
		if !found {
			acc = append(acc, d)
		}
	}
	return acc
}

// stamp writes the leader-assigned fields into a stored message record.
func stamp(rec []byte, queueOffset, commitOffset, storeTs int64) error {
	if err := message.PatchQueueOffset(rec, queueOffset); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	if err := message.PatchCommitLogOffset(rec, commitOffset); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	if err := message.PatchStoreTimestamp(rec, storeTs); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidCommand, err)
	}
	return nil
}

// waitLoop completes proposals in log order.
func (p *proposer) waitLoop() {
	defer p.wg.Done()
	for inf := range p.futs {
		err := inf.f.Error()
		if err == nil {
			if rerr, ok := inf.f.Response().(error); ok {
				err = rerr
			}
		}
		if err != nil {
			// Later entries of this epoch may still be in raft; the next
			// batch waits for them, then re-derives counters by barrier.
			inf.ep.dead.Store(true)
			err = p.mapErr(err)
		}
		for _, pr := range inf.batch {
			if err == nil {
				pr.result.Index = inf.f.Index()
			}
			pr.done <- err
		}
		p.last.Store(&completion{answered: len(inf.batch), seq: p.seq.Load() + 1, round: time.Since(inf.at)})
		p.open.Done()
		<-p.slots
		select {
		case p.freed <- struct{}{}:
		default:
		}
	}
}

func (p *proposer) mapErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Rejected before being appended: resending is safe.
		return p.n.notLeader()
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: %w", ErrLeadershipLost, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	default:
		return err
	}
}
