package commitlog

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
)

// defaultUseMmap selects how segments are read; see
// docs/BENCHMARKS.md ("Storage") for the measurement behind it.
const defaultUseMmap = true

// hit is the entry the last ReadMessage used. Pulls read a queue's
// messages in commit offset order, so the next read is usually in the
// same entry or the next one.
type hit struct {
	seg   *segment
	index uint64
	e     entry
}

// MaxCommitOffset returns the end of the last stored entry's messages: the
// commit offset the next message will get.
func (l *Log) MaxCommitOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.endCO
}

// MinCommitOffset returns the commit offset of the first retained message,
// or MaxCommitOffset when no retained entry holds messages.
func (l *Log) MinCommitOffset() (int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.first() == 0 {
		return l.endCO, nil
	}
	// Entries before the first message all carry the same running end,
	// so the first message entry is the first whose end passes it.
	_, _, e, err := l.searchEnd(l.segs[0].startCO)
	if errors.Is(err, ErrOffsetNotFound) {
		return l.endCO, nil
	}
	return e.commitOf, err
}

// EntryForCommitOffset returns the raft index of the entry holding the
// message byte at commit offset co.
func (l *Log) EntryForCommitOffset(co int64) (uint64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, ErrClosed
	}
	_, index, e, err := l.searchEnd(co)
	if err != nil {
		return 0, err
	}
	if co < e.commitOf {
		return 0, fmt.Errorf("%w: %d", ErrOffsetNotFound, co)
	}
	return index, nil
}

// searchEnd finds the first entry whose messages end after co; caller
// holds mu.
func (l *Log) searchEnd(co int64) (*segment, uint64, entry, error) {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].endCO > co })
	if i == len(l.segs) || l.segs[i].count == 0 {
		return nil, 0, entry{}, fmt.Errorf("%w: %d", ErrOffsetNotFound, co)
	}
	s := l.segs[i]
	var readErr error
	scratch := make([]byte, entrySize)
	j := sort.Search(int(s.count), func(j int) bool {
		e, err := s.readEntryInto(s.base+uint64(j), scratch, l.useMmap)
		if err != nil {
			readErr = err
			return true
		}
		return e.end() > co
	})
	if readErr != nil {
		return nil, 0, entry{}, readErr
	}
	if j == int(s.count) {
		return nil, 0, entry{}, fmt.Errorf("%w: %d", ErrOffsetNotFound, co)
	}
	e, err := s.readEntryInto(s.base+uint64(j), scratch, l.useMmap)
	return s, s.base + uint64(j), e, err
}

// Span is one message record in the log: its commit offset and size.
type Span struct {
	CommitOffset int64
	Size         int32
}

// ReadMessage appends to dst the size bytes of message records starting
// at commit offset co, which must lie within one stored entry's message
// span; otherwise it returns ErrOffsetNotFound. The entry's CRC is checked
// before its bytes are first served.
func (l *Log) ReadMessage(dst []byte, co int64, size int) ([]byte, error) {
	if size <= 0 || size > math.MaxInt32 {
		return dst, fmt.Errorf("%w: size %d", ErrOffsetNotFound, size)
	}
	span := [1]Span{{co, int32(size)}}
	dst, _, err := l.ReadMessages(dst, span[:])
	return dst, err
}

// ReadMessages appends to dst the records of spans in order, as
// ReadMessage would one by one, under one read lock and following the
// entries from one span to the next. It stops at the first span it cannot
// serve and returns how many it appended, with that span's error.
func (l *Log) ReadMessages(dst []byte, spans []Span) ([]byte, int, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return dst, 0, ErrClosed
	}
	h := l.cache.Load()
	defer func() {
		if h != nil && l.cache.Load() != h {
			l.cache.Store(h)
		}
	}()
	for i, sp := range spans {
		co, size := sp.CommitOffset, int(sp.Size)
		if size <= 0 {
			return dst, i, fmt.Errorf("%w: size %d", ErrOffsetNotFound, size)
		}
		next, err := l.locate(h, co)
		if err != nil {
			return dst, i, err
		}
		h = next
		if co < h.e.commitOf || co+int64(size) > h.e.end() {
			return dst, i, fmt.Errorf("%w: [%d, %d) not within one entry", ErrOffsetNotFound, co, co+int64(size))
		}
		at := h.e.pos + int64(h.e.msgOff) + (co - h.e.commitOf)
		if !h.seg.isVerified(h.index) {
			if dst, err = l.readVerified(dst, h, at, size); err != nil {
				return dst, i, err
			}
			continue
		}
		n := len(dst)
		dst = grow(dst, size)
		if err := h.seg.readAt(dst[n:], at, l.useMmap); err != nil {
			return dst[:n], i, err
		}
	}
	return dst, len(spans), nil
}

// locate finds the entry holding co: h (the entry of the previous read),
// the one after it, or by binary search. Caller holds mu.
func (l *Log) locate(h *hit, co int64) (*hit, error) {
	if h != nil {
		if co >= h.e.commitOf && co < h.e.end() {
			return h, nil
		}
		if s := l.segFor(h.index + 1); s != nil {
			var b [entrySize]byte
			if e, err := s.readEntryInto(h.index+1, b[:], l.useMmap); err == nil && co >= e.commitOf && co < e.end() {
				return &hit{seg: s, index: h.index + 1, e: e}, nil
			}
		}
	}
	s, index, e, err := l.searchEnd(co)
	if err != nil {
		return nil, err
	}
	return &hit{seg: s, index: index, e: e}, nil
}

var recordPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// readVerified checks the whole record of h before appending its bytes.
func (l *Log) readVerified(dst []byte, h *hit, at int64, size int) ([]byte, error) {
	if l.useMmap {
		if mm := h.seg.mapping(); mm != nil && h.e.pos+int64(h.e.length) <= int64(len(mm)) {
			rec := mm[h.e.pos : h.e.pos+int64(h.e.length)]
			if err := checkRecord(rec); err != nil {
				return dst, fmt.Errorf("commitlog: index %d: %w", h.index, err)
			}
			h.seg.markVerified(h.index)
			return append(dst, mm[at:at+int64(size)]...), nil
		}
	}
	bp := recordPool.Get().(*[]byte)
	defer recordPool.Put(bp)
	rec := grow((*bp)[:0], int(h.e.length))
	*bp = rec
	if err := h.seg.readAt(rec, h.e.pos, false); err != nil {
		return dst, err
	}
	if err := checkRecord(rec); err != nil {
		return dst, fmt.Errorf("commitlog: index %d: %w", h.index, err)
	}
	h.seg.markVerified(h.index)
	off := at - h.e.pos
	return append(dst, rec[off:off+int64(size)]...), nil
}

// grow extends b by n bytes, reallocating only when its capacity is short.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*cap(b)+n)
	copy(nb, b)
	return nb
}
