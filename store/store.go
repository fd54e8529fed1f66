package store

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/indexfile"
)

// Entry is one consumequeue entry: where a message is in the commitlog
// (its logical commit offset and size) and its tag hash.
type Entry = consumequeue.Entry

// ErrRemoved means a message's bytes are no longer in the commitlog
// (retention removed them, or a node restored from a snapshot never had
// them).
var ErrRemoved = commitlog.ErrOffsetNotFound

// ErrOffsetOutOfRange means a queue offset is outside the queue.
var ErrOffsetOutOfRange = consumequeue.ErrOffsetOutOfRange

// Store is one node's message store. Its methods are safe for concurrent
// use; Dispatch, Restored and Sync are called by dledger's FSM.
type Store struct {
	cfg   Config
	log   hclog.Logger
	clog  *commitlog.Log
	cq    *consumequeue.Store
	index *indexfile.Store

	runs queueRuns // the FSM goroutine's
	// refill holds the queues Open found damaged and cut (repair.go);
	// Open and then the FSM goroutine own it.
	refill map[dledger.QueueKey]bool
	// reindex: Open found the key index damaged and reset it; the
	// refills put their messages' keys too.
	reindex bool
	arrival notifier

	stop chan struct{}
	// halt ends waits for disk space (space.go).
	halt     chan struct{}
	haltOnce sync.Once
	// life orders Start and Close: a Start racing a Close (a node shut
	// down while it begins to serve) must not Add to wg during its Wait.
	life             sync.Mutex
	started, closing bool
	closeOnce        sync.Once
	wg               sync.WaitGroup
}

var (
	_ dledger.Dispatcher      = (*Store)(nil)
	_ dledger.Syncer          = (*Store)(nil)
	_ dledger.DeferredSyncLog = (*commitlog.Log)(nil)
	_ dledger.FlooredLog      = (*commitlog.Log)(nil)
)

// Open opens (or creates) the store in cfg.Dir and recovers each part.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.resolved()
	s := &Store{cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), halt: make(chan struct{}), arrival: notifier{ch: map[dledger.QueueKey]chan struct{}{}}}
	var err error
	if s.clog, err = commitlog.Open(cfg.CommitLog); err != nil {
		return nil, fmt.Errorf("store: commitlog: %w", err)
	}
	if s.cq, err = consumequeue.Open(cfg.ConsumeQueue); err != nil {
		_ = s.clog.Close()
		return nil, fmt.Errorf("store: consumequeue: %w", err)
	}
	if s.index, err = indexfile.Open(cfg.Index); err != nil {
		_ = s.cq.Close()
		_ = s.clog.Close()
		return nil, fmt.Errorf("store: index: %w", err)
	}
	if err := errors.Join(s.verifyIndex(), s.verifyQueues()); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Log is the commitlog: the raft log store dledger replicates through.
func (s *Store) Log() *commitlog.Log { return s.clog }

// Start runs the store's background work (the queues' start following
// retention) until Close.
func (s *Store) Start() {
	s.life.Lock()
	defer s.life.Unlock()
	if s.started || s.closing {
		return
	}
	s.started = true
	s.wg.Add(1)
	go s.correctLoop()
}

// Close stops the background work, syncs and closes the consumequeues and
// the index, and closes the commitlog. The raft node must be closed first.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.life.Lock()
		s.closing = true
		s.life.Unlock()
		close(s.stop)
		s.wg.Wait()
		var errs []error
		if e := s.index.Close(); e != nil {
			errs = append(errs, fmt.Errorf("store: close index: %w", e))
		}
		if e := s.cq.Flush(); e != nil {
			errs = append(errs, fmt.Errorf("store: flush consumequeue: %w", e))
		}
		if e := s.cq.Close(); e != nil {
			errs = append(errs, fmt.Errorf("store: close consumequeue: %w", e))
		}
		if e := s.clog.Close(); e != nil && !errors.Is(e, commitlog.ErrClosed) {
			errs = append(errs, fmt.Errorf("store: close commitlog: %w", e))
		}
		err = errors.Join(errs...)
	})
	return err
}

// correctLoop keeps every queue's min offset at the first message the
// commitlog still holds, so pulls below it get PULL_OFFSET_MOVED to the
// new start instead of reading entries whose bytes are gone.
func (s *Store) correctLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.CorrectInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.CorrectMinOffsets(); err != nil {
				s.log.Error("correcting consumequeue min offsets", "error", err)
			}
		}
	}
}

// CorrectMinOffsets moves the queues' min offsets past the messages
// commitlog retention removed, now (Start also runs it periodically).
func (s *Store) CorrectMinOffsets() error {
	co, err := s.clog.MinCommitOffset()
	if err != nil {
		return err
	}
	return s.cq.CorrectMinOffset(co)
}

// IndexKey is the index key of a message key or unique key of topic.
func IndexKey(topic, key string) string { return indexfile.Key(topic, key) }
