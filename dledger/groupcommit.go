package dledger

// Group commit: the leader's pipeline. One goroutine (run) coalesces queued
// proposals into entries and hands them to raft, up to MaxInflight at a
// time; another (waitLoop) answers them in log order as raft commits them.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

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
	// early tracks the entry for an early answer (earlyack.go), data is
	// its buffer; answered is set by whichever answer came first;
	// applied closes once raft answered (this node applied the entry).
	early    *tracked
	data     []byte
	answered atomic.Bool
	applied  chan struct{}
	p        *proposer
}

// answer answers the batch's callers, once: err, or success at index.
func (inf *inflight) answer(err error, index uint64) bool {
	if !inf.answered.CompareAndSwap(false, true) {
		return false
	}
	// fill expects the callers answered here back, and counts those
	// queued before this moment as already waiting.
	c := &completion{answered: len(inf.batch), seq: inf.p.seq.Load() + 1, round: time.Since(inf.at)}
	for _, pr := range inf.batch {
		if err == nil {
			pr.result.Index, pr.result.applied = index, inf.applied
		}
		pr.done <- err
	}
	inf.p.last.Store(c)
	return true
}

// proposer is the leader's group-commit pipeline.
type proposer struct {
	n      *Node
	reqs   chan *proposal
	kickCh chan struct{}
	slots  chan struct{}
	futs   chan *inflight
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
		futs:   make(chan *inflight, n.cfg.MaxInflight),
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

// coalescable reports whether proposals of a and b may share one entry:
// puts with puts, and a Batchable command with its own type.
func coalescable(a, b Command) bool {
	if a.Type() != b.Type() {
		return false
	}
	if a.Type() == CmdPutMessages {
		return true
	}
	_, ok := a.(Batchable)
	return ok
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
		if carry == nil && coalescable(first.cmd, first.cmd) {
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
	if !coalescable(first.cmd, first.cmd) {
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
	return pr.ctrl == nil && coalescable(first.cmd, pr.cmd) &&
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

// propose builds one entry from batch with ep's counters and hands it to
// raft. It owns one slot, released by waitLoop.
func (p *proposer) propose(ep *epoch, batch []*proposal) {
	live := batch[:0]
	for _, pr := range batch {
		if err := pr.ctx.Err(); err != nil {
			pr.done <- err // not yet proposed: safe to drop
			continue
		}
		if err := ep.admits(pr.cmd); err != nil {
			pr.done <- err
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
	inf := &inflight{at: time.Now(), batch: live, ep: ep, data: data, applied: make(chan struct{}), p: p}
	if a := p.n.acker; a != nil {
		ep.refreshVoters(p.n, a)
		inf.early = a.track(ep, data, inf)
	}
	// Timeout 0: an enqueue timeout would leave a hole in the counters
	// while later entries proceed.
	inf.f = p.n.raft.Apply(data, 0)
	p.futs <- inf
}

func (p *proposer) build(ep *epoch, batch []*proposal) ([]byte, error) {
	first := batch[0].cmd
	if first.Type() == CmdPutMessages {
		return ep.buildPut(batch)
	}
	if bc, ok := first.(Batchable); ok && len(batch) > 1 {
		more := make([]Command, 0, len(batch)-1)
		for _, pr := range batch[1:] {
			more = append(more, pr.cmd)
		}
		return encodeCommand(bc.Merge(more))
	}
	return encodeCommand(first)
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
		var index uint64
		if err == nil {
			index = inf.f.Index()
		}
		close(inf.applied)
		if !inf.answer(err, index) && err != nil {
			// Answered early: the entry was durable on a majority in its
			// term, so it is committed whatever this node's raft says.
			p.n.log.Warn("an entry answered early failed here afterwards", "error", err)
		}
		if inf.early != nil {
			p.n.acker.settled(inf.early, inf.data)
		}
		p.open.Done()
		<-p.slots
		select {
		case p.freed <- struct{}{}:
		default:
		}
	}
}
