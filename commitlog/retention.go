package commitlog

import (
	"errors"
	"fmt"
	"time"
)

// maxDeletesPerRun bounds the work of one retention check, as RocketMQ
// deletes a few files per round so a burst of unlinks does not stall I/O.
const maxDeletesPerRun = 10

func (l *Log) retentionLoop() {
	defer l.wg.Done()
	t := time.NewTicker(l.cfg.Retention.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if _, err := l.RunRetentionOnce(timeNow()); err != nil {
				l.logger.Error("retention check failed", "error", err)
			}
		}
	}
}

// RunRetentionOnce runs one retention check at time now and returns how
// many segments it deleted. Sealed segments whose last write is older than
// FileReservedTime go at a DeleteWhen hour, or at any hour while disk usage
// is above DiskWarnRatio; above DiskForceRatio the oldest go whatever their
// age. The active segment and any segment holding an index above Floor()
// are never deleted. It also sets whether StoreLogs refuses writes
// (usage above DiskRefuseRatio).
func (l *Log) RunRetentionOnce(now time.Time) (int, error) {
	r := l.cfg.Retention
	usage, err := r.DiskUsage(l.cfg.Dir)
	if err != nil {
		return 0, fmt.Errorf("commitlog: disk usage: %w", err)
	}
	l.setRefuse(usage)
	deleted := 0
	for deleted < maxDeletesPerRun {
		s := l.oldestDeletable()
		if s == nil {
			break
		}
		expired := now.Sub(s.modTime) > r.FileReservedTime
		timeToDelete := l.delHours[now.Hour()] || usage > r.DiskWarnRatio
		if !(expired && timeToDelete) && usage <= r.DiskForceRatio {
			break
		}
		if err := l.deleteOldest(s); err != nil {
			return deleted, err
		}
		l.logger.Info("retention deleted segment", "segment", s.base, "last", s.last(),
			"expired", expired, "disk_usage", usage)
		deleted++
		if usage > r.DiskForceRatio {
			if usage, err = r.DiskUsage(l.cfg.Dir); err != nil {
				return deleted, fmt.Errorf("commitlog: disk usage: %w", err)
			}
			l.setRefuse(usage)
		}
	}
	return deleted, nil
}

func (l *Log) setRefuse(usage float64) {
	refuse := usage > l.cfg.Retention.DiskRefuseRatio
	if l.refuse.Swap(refuse) != refuse {
		l.logger.Warn("disk usage crossed the refuse watermark", "usage", usage, "refusing_writes", refuse)
	}
}

// SetRetentionFloor replaces Config.Retention.Floor: the raft node whose
// snapshots decide it is built after the log is opened. Safe to call while
// the log is in use.
func (l *Log) SetRetentionFloor(f func() uint64) {
	if f == nil {
		l.floorFn.Store(nil)
		return
	}
	l.floorFn.Store(&f)
}

// oldestDeletable returns the first segment if it is sealed and entirely at
// or below the floor.
func (l *Log) oldestDeletable() *segment {
	floor := uint64(0)
	if f := l.floorFn.Load(); f != nil {
		floor = (*f)()
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || len(l.segs) < 2 || l.historyPins.Load() > 0 {
		return nil
	}
	s := l.segs[0]
	if !s.sealed || s.count == 0 || s.last() > floor {
		return nil
	}
	return s
}

// deleteOldest removes s if it is still the first segment.
func (l *Log) deleteOldest(s *segment) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed || len(l.segs) < 2 || l.segs[0] != s {
		l.mu.Unlock()
		return nil
	}
	l.segs = l.segs[1:]
	if h := l.cache.Load(); h != nil && h.seg == s {
		l.cache.Store(nil)
	}
	err := s.close()
	l.mu.Unlock()
	err = errors.Join(err, removeFiles(l.fs, l.cfg.Dir, s.base))
	if err == nil {
		err = l.syncDir()
	}
	if err != nil {
		return fmt.Errorf("commitlog: delete segment %d: %w", s.base, err)
	}
	return nil
}
