package commitlog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// durability tracks how far the log is durable and runs the background
// fsync of deferred batches (Config.DeferSync).
//
// index is the last raft index StoreLogs's promise covers: fsynced in
// SyncFlush, written in AsyncFlush. It only moves back when the log is
// truncated below it. The syncer reads its target and advances the index
// under Log.flushMu, which truncation also holds, so a truncation is never
// overtaken by a sync that started before it; StoreLogs advances it under
// Log.wmu, which truncation holds too. Advances only ever raise it.
type durability struct {
	index atomic.Uint64
	err   atomic.Pointer[error] // a deferred or background fsync failed: sticky

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when index or err changes

	kick chan struct{} // cap 1: a deferred batch waits for the syncer
}

func (d *durability) init() {
	d.changed = make(chan struct{})
	d.kick = make(chan struct{}, 1)
}

// advance raises the durable index to i (never lowers it: a sync that
// started earlier may finish later) and wakes waiters.
func (d *durability) advance(i uint64) {
	for {
		old := d.index.Load()
		if i <= old {
			return
		}
		if d.index.CompareAndSwap(old, i) {
			d.broadcast()
			return
		}
	}
}

// truncate lowers the durable index to at most i, after the entries above
// i were removed; caller holds Log.flushMu.
func (d *durability) truncate(i uint64) {
	if d.index.Load() > i {
		d.index.Store(i)
	}
}

func (d *durability) broadcast() {
	d.mu.Lock()
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

func (d *durability) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.changed
}

// setFailed makes err the sticky failure (the first one wins) and wakes
// waiters.
func (d *durability) setFailed(err error) {
	d.err.CompareAndSwap(nil, &err)
	d.broadcast()
}

func (d *durability) failed() error {
	if p := d.err.Load(); p != nil {
		return *p
	}
	return nil
}

// DurableIndex returns the last index the log's flush mode promise covers:
// fsynced in SyncFlush (a batch whose fsync Config.DeferSync deferred
// counts once the background sync of it returned), written in AsyncFlush.
func (l *Log) DurableIndex() uint64 { return l.dur.index.Load() }

// WaitDurable returns once DurableIndex reaches index, or with an error
// when the log failed (a deferred fsync did not succeed: whether the batch
// is on disk is unknown), is closed, or ctx ends.
func (l *Log) WaitDurable(ctx context.Context, index uint64) error {
	for {
		ch := l.dur.wait()
		if l.dur.index.Load() >= index {
			return nil
		}
		if err := l.dur.failed(); err != nil {
			return fmt.Errorf("%w: %w", ErrFailed, err)
		}
		select {
		case <-ch:
		case <-l.stop:
			// Close syncs everything written before it returns; what is
			// not durable by then never will be.
			if l.dur.index.Load() >= index {
				return nil
			}
			return ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// deferSync reports whether StoreLogs may leave this batch's fsync to the
// syncer. Caller holds wmu.
func (l *Log) deferSync() bool {
	if l.cfg.FlushMode != SyncFlush {
		return false
	}
	f := l.deferFn.Load()
	return f != nil && (*f)()
}

// SetDeferSync replaces Config.DeferSync: the raft node that decides when
// a batch's fsync may be deferred is built after the log is opened. nil
// turns deferring off. Safe to call while the log is in use.
func (l *Log) SetDeferSync(f func() bool) {
	if f == nil {
		l.deferFn.Store(nil)
		return
	}
	l.deferFn.Store(&f)
}

// requestSync wakes the syncer; it never blocks.
func (l *Log) requestSync() {
	select {
	case l.dur.kick <- struct{}{}:
	default:
	}
}

// syncLoop fsyncs deferred batches: one fsync covers every batch written
// before it started, so batches written during a sync share the next one.
func (l *Log) syncLoop() {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case <-l.dur.kick:
			l.syncDeferred()
		}
	}
}

// syncDeferred fsyncs the active segment and marks what it held durable.
// Earlier segments were synced when they were sealed. flushMu keeps the
// segment open and the log untruncated for the duration.
func (l *Log) syncDeferred() {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.dur.failed() != nil {
		return
	}
	l.mu.RLock()
	act, target, closed := l.active(), l.lastIndex, l.closed
	l.mu.RUnlock()
	if closed || act == nil || target <= l.dur.index.Load() {
		return
	}
	start := time.Now()
	if err := act.f.Sync(); err != nil {
		err = fmt.Errorf("commitlog: deferred sync of segment %d: %w", act.base, err)
		l.logger.Error("deferred fsync failed; log refuses writes until reopened", "error", err)
		l.dur.setFailed(err)
		l.signalFailed()
		return
	}
	l.synced(start, int(target-l.dur.index.Load()))
	l.dur.advance(target)
}

// synced tells Config.OnSync of an fsync begun at start that made n
// entries durable.
func (l *Log) synced(start time.Time, n int) {
	if f := l.cfg.OnSync; f != nil {
		f(time.Since(start), n)
	}
}
