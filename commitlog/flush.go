package commitlog

import "time"

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
// state captured before the sync. A failed sync is not made sticky here:
// the next flush retries, and acknowledged data was already at risk in
// AsyncFlush.
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
		l.dirty.Store(true)
		return err
	}
	if err := act.idx.Sync(); err != nil {
		l.dirty.Store(true)
		return err
	}
	return l.writeCheckpoint(ck)
}
