package commitlog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/hashicorp/raft"
)

// History is a stream of the log's framed records over [First, Last], as
// they are on disk: a snapshot install carries it to a node that lacks
// the log below the snapshot (dledger). Size is the stream's exact length.
// While a History is open retention deletes nothing, so the segments it
// reads stay; Close it.
type History struct {
	First, Last uint64
	Size        int64
	r           io.Reader
	closed      bool
	l           *Log
}

// Read implements io.Reader.
func (h *History) Read(p []byte) (int, error) { return h.r.Read(p) }

// Close releases the retention pin. It is idempotent.
func (h *History) Close() error {
	if !h.closed {
		h.closed = true
		h.l.historyPins.Add(-1)
	}
	return nil
}

// History opens the stream of the records from the first index on disk
// through index through (or the last index, if lower). An empty log, or
// one starting after through, gives an empty stream with First = Last = 0.
// The records are read lazily, as the stream is read: opening costs two
// entry-index reads per segment.
func (l *Log) History(through uint64) (*History, error) {
	l.historyPins.Add(1)
	h := &History{l: l}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		l.historyPins.Add(-1)
		return nil, ErrClosed
	}
	first := l.first()
	last := min(through, l.lastIndex)
	if first == 0 || first > last {
		h.r = eofReader{}
		return h, nil
	}
	var parts []io.Reader
	for _, s := range l.segs {
		if s.count == 0 || s.last() < first || s.base > last {
			continue
		}
		a, err := s.readEntry(max(first, s.base))
		if err != nil {
			h.Close()
			return nil, err
		}
		b, err := s.readEntry(min(last, s.last()))
		if err != nil {
			h.Close()
			return nil, err
		}
		end := b.pos + int64(b.length)
		parts = append(parts, io.NewSectionReader(s.f, a.pos, end-a.pos))
		h.Size += end - a.pos
	}
	h.First, h.Last, h.r = first, last, io.MultiReader(parts...)
	return h, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// historyBatchBytes bounds one StoreLogs of an import.
const historyBatchBytes = 4 << 20

// ImportHistory stores the records of a History stream, [first, last], in
// an empty log, verifying every record's CRC and that the indexes run
// from first to last without a gap, and returns once they are durable.
// visit, if not nil, sees each entry after it is stored (its slices are
// the caller's to keep). Raft's reset of the whole log after the install
// (DeleteRange up to last) is then ignored: these entries are the
// history the snapshot stands on, and retention deletes them in time.
func (l *Log) ImportHistory(r io.Reader, first, last uint64, visit func(*raft.Log) error) error {
	if last, err := l.LastIndex(); err != nil || last != 0 {
		return errors.Join(err, fmt.Errorf("commitlog: import history into a log that ends at %d", last))
	}
	if err := l.markHistoryPending(); err != nil {
		return err
	}
	br := bufio.NewReaderSize(r, 256<<10)
	next := first
	var batch []*raft.Log
	size := 0
	flush := func() error {
		if err := l.StoreLogs(batch); err != nil {
			return err
		}
		for _, e := range batch {
			if visit != nil {
				if err := visit(e); err != nil {
					return err
				}
			}
		}
		batch, size = batch[:0], 0
		return nil
	}
	for next <= last {
		e, n, err := readHistoryRecord(br)
		if err != nil {
			return fmt.Errorf("commitlog: import history at index %d of [%d, %d]: %w", next, first, last, err)
		}
		if e.Index != next {
			return fmt.Errorf("commitlog: import history: record holds index %d, want %d: %w", e.Index, next, ErrCorrupt)
		}
		batch, size = append(batch, e), size+n
		next++
		if size >= historyBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return fmt.Errorf("commitlog: import history: bytes after index %d: %w", last, ErrCorrupt)
	}
	if err := l.WaitDurable(context.Background(), last); err != nil {
		return err
	}
	l.holdThrough.Store(last)
	l.logger.Info("imported history below a snapshot", "first", first, "last", last)
	return nil
}

// readHistoryRecord reads and checks one framed record; the entry owns its memory.
func readHistoryRecord(br *bufio.Reader) (*raft.Log, int, error) {
	hdr, err := br.Peek(frameHeaderSize)
	if err != nil {
		return nil, 0, errors.Join(ErrCorrupt, err)
	}
	n := frameLen(hdr)
	if n == 0 {
		return nil, 0, fmt.Errorf("%w: bad record length", ErrCorrupt)
	}
	rec := make([]byte, n)
	if _, err := io.ReadFull(br, rec); err != nil {
		return nil, 0, errors.Join(ErrCorrupt, err)
	}
	if err := checkRecord(rec); err != nil {
		return nil, 0, err
	}
	e := &raft.Log{}
	decodeRecord(rec, e)
	return e, n, nil
}

// historyPendingFile marks an import whose entries the caller has not yet
// finished deriving from (HistoryDerived): a crash in between leaves the
// entries in the log but not in the consumequeues, and the restart must
// derive them again.
const historyPendingFile = "history.pending"

func (l *Log) markHistoryPending() error {
	f, err := l.fs.OpenFile(l.path(historyPendingFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("commitlog: mark history import: %w", err)
	}
	err = errors.Join(f.Sync(), f.Close(), l.syncDir())
	if err != nil {
		return fmt.Errorf("commitlog: mark history import: %w", err)
	}
	return nil
}

// HistoryPending reports whether an imported history has not yet been
// derived from (HistoryDerived not called since ImportHistory).
func (l *Log) HistoryPending() bool {
	_, err := l.fs.Stat(l.path(historyPendingFile))
	return err == nil
}

// HistoryDerived records that what is derived from an imported history
// (consumequeues, index) is durable.
func (l *Log) HistoryDerived() error {
	if err := l.fs.Remove(l.path(historyPendingFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("commitlog: clear history import mark: %w", err)
	}
	return l.syncDir()
}

// HistoryStream is History for callers that know the log only by an
// interface (dledger.HistoryLog).
func (l *Log) HistoryStream(through uint64) (first, last uint64, size int64, r io.ReadCloser, err error) {
	h, err := l.History(through)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	return h.First, h.Last, h.Size, h, nil
}
