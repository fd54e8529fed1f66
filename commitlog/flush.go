package commitlog

import (
	"fmt"
	"time"
)

// flushLoop is the AsyncFlush background flusher: every FlushInterval it
// syncs what was written and checkpoints it.
func (l *Log) flushLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if err := l.flushOnce(); err != nil {
				l.logger.Error("background flush failed", "error", err)
			}
		}
	}
}

// flushOnce syncs the active segment and its index and checkpoints the
// state captured before the sync. A failed sync is sticky, as a failed
// StoreLogs is: after a failed fsync the kernel may have dropped the dirty
// pages and report the next fsync as a success ("fsyncgate"), so a retry
// would checkpoint data that never reached the disk. The log refuses
// writes until reopened, and reopening scans the tail.
func (l *Log) flushOnce() error {
	if !l.dirty.Swap(false) {
		return nil
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	ck := l.currentCheckpoint()
	l.mu.RLock()
	act := l.active()
	l.mu.RUnlock()
	if act == nil {
		return nil
	}
	if err := act.f.Sync(); err != nil {
		return l.flushFailed(fmt.Errorf("commitlog: background sync of segment %d: %w", act.base, err))
	}
	if err := act.idx.Sync(); err != nil {
		return l.flushFailed(fmt.Errorf("commitlog: background sync of segment %d's index: %w", act.base, err))
	}
	return l.writeCheckpoint(ck)
}

// flushFailed makes a background flush failure sticky.
func (l *Log) flushFailed(err error) error {
	l.logger.Error("background fsync failed; log refuses writes until reopened", "error", err)
	l.dur.setFailed(err)
	l.signalFailed()
	return err
}
