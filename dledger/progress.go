package dledger

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// progressTransport records, on the leader, how far each follower is
// known to hold the log, from the answers to raft's own replication
// calls: hashicorp/raft keeps its match indexes private. AddVoter uses it
// to promote a new node only once it has caught up.
//
// It also keeps raft's retry backoff towards a failing follower short.
// hashicorp/raft doubles the pause before its next AppendEntries after
// every failed one, up to 10 s, and nothing cuts a pause short: a follower
// killed, cut off or refusing writes (disk full) for a few seconds is
// replicated to again only seconds after it is back, and if the other
// follower fails meanwhile the group stops writing for that long. Here an
// AppendEntries that cannot reach its follower, or that the follower
// could not store, is retried inside the call every retryMax at most, for
// up to retryFor, before raft sees an error (so raft counts one failure
// per retryFor, not one per attempt).
type progressTransport struct {
	raft.Transport
	// hb, when set, carries heartbeats (heartbeat.go).
	hb raft.Transport
	// stop reports that retrying is pointless: the node is closing or no
	// longer leads.
	stop func() bool
	mu   sync.Mutex
	// match is the highest index a successful AppendEntries or
	// InstallSnapshot to the address covered.
	match map[raft.ServerAddress]uint64
	// piped counts the address's open pipelines: raft opens one only after
	// a synchronous AppendEntries brought the follower up to the leader's
	// last index, and closes it when replication falls back to catch-up.
	piped map[raft.ServerAddress]int
	// answered is when the address last answered an AppendEntries
	// (heartbeats included); refusing, whether its last answer to entries
	// was that it could not store them (a full disk). TransferTarget
	// reads them.
	answered map[raft.ServerAddress]time.Time
	refusing map[raft.ServerAddress]bool
	now      func() time.Time // time.Now; a test's clock
}

const (
	// retryFirst and retryMax bound the pause between attempts of one
	// AppendEntries to a follower that fails.
	retryFirst = 10 * time.Millisecond
	retryMax   = 100 * time.Millisecond
	// retryFor is how long one AppendEntries keeps retrying a follower it
	// cannot reach before raft sees the error.
	retryFor = time.Second
)

// progressPreVoteTransport adds pre-vote when the wrapped transport has it.
type progressPreVoteTransport struct {
	*progressTransport
	raft.WithPreVote
}

func newProgressTransport(t raft.Transport, hb raft.Transport, stop func() bool) (raft.Transport, *progressTransport) {
	p := &progressTransport{Transport: t, hb: hb, stop: stop, match: map[raft.ServerAddress]uint64{},
		piped: map[raft.ServerAddress]int{}, answered: map[raft.ServerAddress]time.Time{},
		refusing: map[raft.ServerAddress]bool{}, now: time.Now}
	if pv, ok := t.(raft.WithPreVote); ok {
		return progressPreVoteTransport{p, pv}, p
	}
	return p, p
}

// caughtUp reports whether the follower at addr holds the log through
// index, or is being replicated to in pipeline mode (raft's own sign that
// it has caught up), and how far it is known to hold it.
func (t *progressTransport) caughtUp(addr raft.ServerAddress, index uint64) (bool, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.match[addr]
	return m >= index || t.piped[addr] > 0, m
}

func (t *progressTransport) advance(addr raft.ServerAddress, index uint64) {
	t.mu.Lock()
	if index > t.match[addr] {
		t.match[addr] = index
	}
	t.mu.Unlock()
}

// AppendEntries implements raft.Transport.
func (t *progressTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if isHeartbeat(req) {
		// raft's heartbeat goroutine has its own backoff, capped at half
		// the heartbeat timeout; the heartbeat transport its own deadline.
		tr := t.Transport
		if t.hb != nil {
			tr = t.hb
		}
		err := tr.AppendEntries(id, target, req, resp)
		if err == nil {
			t.heard(target, false, false)
		}
		return err
	}
	err := t.appendRetrying(id, target, req, resp)
	if err == nil || errors.Is(err, errFollowerStore) {
		t.heard(target, true, err != nil)
	}
	if err != nil {
		return err
	}
	if resp.Success && len(req.Entries) > 0 {
		t.advance(target, req.Entries[len(req.Entries)-1].Index)
	}
	return nil
}

// heard records an answer from target: to a request with entries
// (withEntries), whether it refused to store them.
func (t *progressTransport) heard(target raft.ServerAddress, withEntries, refused bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.answered[target] = t.now()
	if withEntries {
		t.refusing[target] = refused
	}
}

// TransferTarget picks the follower leadership should go to among
// voters (this node's id excluded): one that answered within recent and
// does not refuse entries, the most caught up first, then the one heard
// from last. ok is false when none qualifies. hashicorp/raft's own pick
// is the voter it has sent the most of the log to, the first in
// configuration order on a tie (a full leader writes nothing, so its
// followers tie), even one that has not answered for seconds; a transfer
// to it never completes, and a leader that must hand on (a full disk)
// never does.
func (t *progressTransport) TransferTarget(voters []raft.Server, self raft.ServerID, recent time.Duration) (raft.Server, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best raft.Server
	var bestMatch uint64
	var bestHeard time.Time
	found := false
	for _, s := range voters {
		heard, ok := t.answered[s.Address]
		if s.ID == self || s.Suffrage != raft.Voter || !ok || t.now().Sub(heard) > recent || t.refusing[s.Address] {
			continue
		}
		m := t.match[s.Address]
		if t.piped[s.Address] > 0 {
			m = math.MaxUint64 // raft pipelines only to a caught-up follower
		}
		if !found || m > bestMatch || m == bestMatch && heard.After(bestHeard) {
			best, bestMatch, bestHeard, found = s, m, heard, true
		}
	}
	return best, found
}

// isHeartbeat reports whether req is one of raft's heartbeats (no log
// position, no entries, no commit index).
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	return len(req.Entries) == 0 && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 && req.LeaderCommitIndex == 0
}

// appendRetrying sends req until it gets an answer raft should act on,
// retryFor passes or retrying is pointless. A follower that could not
// store (or read) entries answers a rejection without NoRetryBackoff;
// handed to raft, that would walk the follower's next index back one
// entry per attempt, although nothing in its log disagrees, so it is
// retried like an unreachable follower and, once retryFor is over,
// returned as an error (raft then keeps the next index). AppendEntries is
// idempotent: a request resent after a lost answer changes nothing.
func (t *progressTransport) appendRetrying(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	deadline := time.Now().Add(retryFor)
	wait := retryFirst
	for {
		err := t.Transport.AppendEntries(id, target, req, resp)
		if err == nil && (resp.Success || resp.NoRetryBackoff || resp.Term > req.Term) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("%w: %s has its log through %d", errFollowerStore, target, resp.LastLog)
		}
		if t.stop() || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, retryMax)
	}
}

// errFollowerStore is what raft sees of a follower that keeps failing to
// store entries (a full disk).
var errFollowerStore = errors.New("dledger: follower could not store the entries")

// InstallSnapshot implements raft.Transport.
func (t *progressTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	err := t.Transport.InstallSnapshot(id, target, args, resp, data)
	if err == nil && resp.Success {
		t.advance(target, args.LastLogIndex)
	}
	return err
}

// AppendEntriesPipeline implements raft.Transport.
func (t *progressTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.piped[target]++
	t.mu.Unlock()
	return &progressPipeline{AppendPipeline: p, t: t, target: target}, nil
}

// Close implements raft.WithClose when the wrapped transport does.
func (t *progressTransport) Close() error { return closeTransport(t.Transport) }

// closeTransport closes t when it can be closed (raft.WithClose).
func closeTransport(t raft.Transport) error {
	if c, ok := t.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

type progressPipeline struct {
	raft.AppendPipeline
	t      *progressTransport
	target raft.ServerAddress
	once   sync.Once
}

// Close implements raft.AppendPipeline.
func (p *progressPipeline) Close() error {
	p.once.Do(func() {
		p.t.mu.Lock()
		p.t.piped[p.target]--
		p.t.mu.Unlock()
	})
	return p.AppendPipeline.Close()
}

// voteAttempts bounds how often one vote request is sent: a connection
// pooled before the peer restarted fails at once (EOF, reset), and raft
// would spend a whole election round on each of the pool's stale
// connections (a kill-leader step stalled 3 s on them in a container
// run). An attempt that failed fast is repeated, taking the next pooled
// connection or dialing a fresh one; one that failed slowly (a dial or
// read timeout) is not. Asking again for a vote in the same term gets the
// same answer.
const (
	voteAttempts  = 4
	voteFastError = 100 * time.Millisecond
)

// retryVote runs call until it succeeds, fails slowly or for a reason of
// this node's own (the vote guard's), or voteAttempts are spent.
func retryVote(call func() error) error {
	var err error
	for range voteAttempts {
		start := time.Now()
		err = call()
		if err == nil || errors.Is(err, errRecovering) || errors.Is(err, errNoSpace) || time.Since(start) > voteFastError {
			return err
		}
	}
	return err
}

// RequestVote implements raft.Transport.
func (t *progressTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, req *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return retryVote(func() error { return t.Transport.RequestVote(id, target, req, resp) })
}

// RequestPreVote implements raft.WithPreVote.
func (t progressPreVoteTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, req *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return retryVote(func() error { return t.WithPreVote.RequestPreVote(id, target, req, resp) })
}
