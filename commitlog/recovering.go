package commitlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync/atomic"
)

// Recovering marker (frozen, 20 bytes, little endian), file "recovering":
//
//	 0       4       8               16      20
//	+-------+-------+---------------+-------+
//	| magic |version| through index |crc32c |
//	| RMRC  |   1   |     u64       |  u32  |
//	+-------+-------+---------------+-------+
//
// It exists while the log is shorter than what it held before recovery
// cut a corrupt record out of its middle: entries up to "through" may have
// been acknowledged to the raft leader and are not all on this disk any
// more. It is written (temp file, fsync, rename, fsync of the directory)
// before the cut is made, so a crash cannot leave the cut without it, and
// removed once the log is durable through that index again.
const (
	recoveringName     = "recovering"
	recoveringTempName = "recovering.tmp"
	recoveringMagic    = 0x524d5243 // "RMRC"
	recoveringVersion  = 1
	recoveringSize     = 20
)

// recovering is the in-memory copy of the marker (through, 0 when there
// is none; set during recovery, cleared under wmu) and, during recovery,
// the last index the checkpoint says was synced.
type recovering struct {
	through atomic.Uint64
	synced  uint64
}

// RecoveringThrough returns X while the log recovers from corruption that
// removed entries it had stored up to index X (see doc.go, "Corruption"),
// and 0 otherwise. While it is non-zero the node must neither vote nor
// stand for election: its log no longer holds everything it acknowledged.
// It drops to 0 once StoreLogs made the log durable through X.
func (l *Log) RecoveringThrough() uint64 { return l.recov.through.Load() }

func encodeRecovering(through uint64) []byte {
	b := make([]byte, 0, recoveringSize)
	b = binary.LittleEndian.AppendUint32(b, recoveringMagic)
	b = binary.LittleEndian.AppendUint32(b, recoveringVersion)
	b = binary.LittleEndian.AppendUint64(b, through)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// readRecovering loads the marker. An unreadable marker fails Open: it
// was written durably, so a damaged one means the disk is damaged, and
// guessing X could let the node vote too early.
func (l *Log) readRecovering() error {
	f, err := l.fs.OpenFile(l.path(recoveringName), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("commitlog: open recovering marker: %w", err)
	}
	defer f.Close()
	b := make([]byte, recoveringSize+1)
	n, _ := io.ReadFull(f, b)
	b = b[:n]
	if n != recoveringSize || binary.LittleEndian.Uint32(b) != recoveringMagic ||
		binary.LittleEndian.Uint32(b[4:]) != recoveringVersion ||
		crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return fmt.Errorf("%w: recovering marker unreadable; restore the node from a peer", ErrCorrupt)
	}
	l.recov.through.Store(binary.LittleEndian.Uint64(b[8:]))
	return nil
}

// markRecovering durably raises the marker to through (it never lowers).
func (l *Log) markRecovering(through uint64) error {
	if through <= l.recov.through.Load() {
		return nil
	}
	tmp := l.path(recoveringTempName)
	f, err := l.fs.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("commitlog: recovering marker: %w", err)
	}
	_, err = f.Write(encodeRecovering(through))
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = l.fs.Rename(tmp, l.path(recoveringName))
	}
	if err == nil {
		err = l.fs.SyncDir(l.cfg.Dir)
	}
	if err != nil {
		return fmt.Errorf("commitlog: recovering marker: %w", err)
	}
	l.recov.through.Store(through)
	l.logger.Error("corrupt record below the last index: recovering; the node does not vote until its log is back",
		"recovering_through", through)
	return nil
}

// clearRecovering removes the marker once the log is durable through X.
// Caller holds wmu, and the entries up to lastIndex are durable (a synced
// StoreLogs, or recovery). A failure leaves the marker: the node only
// keeps abstaining a little longer.
func (l *Log) clearRecovering() {
	x := l.recov.through.Load()
	if x == 0 || l.lastIndex < x {
		return
	}
	err := l.fs.Remove(l.path(recoveringName))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		l.logger.Warn("removing recovering marker", "error", err)
		return
	}
	if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
		l.logger.Warn("removing recovering marker", "error", err)
		return
	}
	l.recov.through.Store(0)
	l.logger.Info("recovered: log durable through the recovering marker again", "through", x, "last", l.lastIndex)
}

// caughtUp clears the marker after a StoreLogs that was not deferred, once
// the log reaches X; in AsyncFlush the segment is synced first. Caller
// holds wmu.
func (l *Log) caughtUp(act *segment) {
	if x := l.recov.through.Load(); x == 0 || l.lastIndex < x {
		return
	}
	if l.cfg.FlushMode == AsyncFlush {
		if err := act.f.Sync(); err != nil {
			l.logger.Warn("sync before removing recovering marker", "error", err)
			return
		}
	}
	l.clearRecovering()
}

// verifyPrefix checks the CRC and index of the first n records of s,
// which must end at end: a segment or checkpoint prefix that recovery
// would otherwise trust unread. It only reads.
func (l *Log) verifyPrefix(s *segment, n uint64, end int64) error {
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, end), 1<<20)
	left := end
	for i := uint64(0); i < n; i++ {
		rec, why := readRecord(r, s.base+i, left)
		if rec == nil {
			return fmt.Errorf("%w: segment %d index %d: %s", ErrCorrupt, s.base, s.base+i, why)
		}
		left -= int64(len(rec))
	}
	if left != 0 {
		return fmt.Errorf("%w: segment %d: %d bytes after its last record", ErrCorrupt, s.base, left)
	}
	return nil
}

// survivorAfter returns the highest index of an intact record after bad
// in segs[from:] (found through the entry index files, newest first), or
// 0. An intact record after a bad one means the bad one is not a torn
// tail but damage to data that was written before it.
func (l *Log) survivorAfter(from int, bad uint64) uint64 {
	for k := len(l.segs) - 1; k >= from; k-- {
		s := l.segs[k]
		fi, err := s.idx.Stat()
		if err != nil {
			continue
		}
		for n := uint64(fi.Size() / entrySize); n > 0; n-- {
			i := s.base + n - 1
			if i <= bad {
				break
			}
			if l.intact(s, i) {
				return i
			}
		}
	}
	return 0
}

// intact reports whether the entry index record of i points at a record
// of index i that passes its checks.
func (l *Log) intact(s *segment, i uint64) bool {
	e, err := s.readEntry(i)
	return err == nil && e.pos >= 0 && l.recordAt(s, e.pos, i)
}

// noteCut is called before recovery cuts segment segs[k] at index bad,
// file position pos: if the log held later entries, or the checkpoint says
// entries from bad on were synced, the marker is raised to the highest of
// them first.
func (l *Log) noteCut(k int, bad uint64, pos int64) error {
	through := l.survivorAfter(k, bad)
	if through == 0 {
		through = l.resync(l.segs[k], pos, bad)
	}
	if l.recov.synced >= bad {
		through = max(through, l.recov.synced)
	}
	if through < bad {
		return nil // a torn or unwritten tail: nothing acknowledged is lost
	}
	return l.markRecovering(through)
}

// resync looks for intact records of indexes above bad in s after pos,
// where the entry index may be gone (it is synced only when a segment is
// sealed): at every position whose index field is plausible it tries a
// record, skipping zeroed 4 KiB blocks (a preallocated tail) whole. It
// returns the highest index found, or 0.
func (l *Log) resync(s *segment, pos int64, bad uint64) uint64 {
	fi, err := s.f.Stat()
	if err != nil {
		return 0
	}
	const window, block = 1 << 20, 4096
	buf := make([]byte, window+recordHeaderSize)
	zero := make([]byte, block)
	found := uint64(0)
	for w := pos + 1; w < fi.Size(); w += window {
		n, _ := s.f.ReadAt(buf, w)
		for p := 0; p+recordHeaderSize <= n && p < window; p++ {
			if (w+int64(p))%block == 0 && p+block <= n && bytes.Equal(buf[p:p+block], zero) {
				p += block - recordHeaderSize
				continue
			}
			i := recordIndex(buf[p:])
			if i <= max(bad, found) || i > bad+maxResyncGap || frameLen(buf[p:]) == 0 {
				continue
			}
			if l.recordAt(s, w+int64(p), i) {
				found = i
			}
		}
	}
	return found
}

// maxResyncGap bounds the indexes resync believes: a random field in the
// middle of a record is rarely within this of the cut.
const maxResyncGap = 1 << 24

// recordAt reports whether an intact record of index i starts at pos.
func (l *Log) recordAt(s *segment, pos int64, i uint64) bool {
	hdr := make([]byte, frameHeaderSize)
	if _, err := s.f.ReadAt(hdr, pos); err != nil {
		return false
	}
	n := frameLen(hdr)
	if fi, err := s.f.Stat(); n == 0 || err != nil || pos+int64(n) > fi.Size() {
		return false // also keeps a torn length from allocating a gigabyte
	}
	rec := make([]byte, n)
	if _, err := s.f.ReadAt(rec, pos); err != nil {
		return false
	}
	return checkRecord(rec) == nil && recordIndex(rec) == i
}
