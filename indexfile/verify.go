package indexfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Verify checks every file against what puts make of it: a header whose
// counts fit the geometry, entries with a non-negative hash and time, a
// commit offset in [0, maxCommitOffset) and a prev link to an earlier
// entry of the same slot, and slots that head the newest entry of their
// own hash. A torn page or flipped bit anywhere (header, slots, entries)
// breaks one of these with near certainty; crash recovery alone trusts
// the counted entries and the older files unread. It returns an error
// wrapping ErrCorrupt that names the first damaged file, nil when all
// pass. The index is derived data: the caller rebuilds it (Reset, then
// Put again from the commitlog).
func (s *Store) Verify(maxCommitOffset int64) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.dropped {
		return fmt.Errorf("%w: Open dropped an unreadable file", ErrCorrupt)
	}
	for _, x := range s.files {
		if err := x.verify(maxCommitOffset); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrCorrupt, x.name, err)
		}
	}
	return nil
}

func (x *indexFile) verify(maxCO int64) error {
	h := x.hdr
	if h.slotCount < 0 || int64(h.slotCount) > x.slotNum || h.indexCount > x.indexNum {
		return errors.New("header counts out of range")
	}
	if h.indexCount <= 1 && x.indexNum > 1 {
		// A zeroed header: puts write entry 1 before a header counts it,
		// and the store flushes the index before every raft snapshot, so
		// an uncounted entry 1 is either a crash before the first flush
		// (rebuilding costs only time) or a torn header.
		var b [EntrySize]byte
		if err := x.read(b[:], x.entryPos(1)); err != nil {
			return err
		}
		if b != ([EntrySize]byte{}) {
			return errors.New("header counts no entries, entry 1 holds one")
		}
	}
	slots := make([]byte, x.slotNum*SlotSize)
	if err := x.read(slots, HeaderSize); err != nil {
		return err
	}
	slotOf := func(hash int32) int64 { return int64(hash) % x.slotNum }
	head := func(slot int64) int32 { return int32(binary.BigEndian.Uint32(slots[slot*SlotSize:])) }
	hashes := make([]int32, h.indexCount)
	buf := make([]byte, recoverChunk/EntrySize*EntrySize)
	for n := int32(1); n < h.indexCount; {
		k := min(int32(len(buf)/EntrySize), h.indexCount-n)
		if err := x.read(buf[:k*EntrySize], x.entryPos(n)); err != nil {
			return err
		}
		for i := range k {
			e := decodeEntry(buf[i*EntrySize:])
			m := n + i
			if e.keyHash < 0 || e.timeDiff < 0 || e.phy < 0 || e.phy >= maxCO || e.prev < 0 || e.prev >= m {
				return fmt.Errorf("entry %d out of range", m)
			}
			if e.prev > 0 && slotOf(hashes[e.prev]) != slotOf(e.keyHash) {
				return fmt.Errorf("entry %d links to entry %d of another slot", m, e.prev)
			}
			if head(slotOf(e.keyHash)) < m {
				return fmt.Errorf("slot of entry %d heads an older entry", m)
			}
			hashes[m] = e.keyHash
		}
		n += k
	}
	for slot := int64(0); slot < x.slotNum; slot++ {
		if v := head(slot); v < 0 || v >= h.indexCount || (v > 0 && slotOf(hashes[v]) != slot) {
			return fmt.Errorf("slot %d heads entry %d", slot, v)
		}
	}
	return nil
}

// Reset removes every index file, leaving an empty index that puts fill
// again.
func (s *Store) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	var errs []error
	for _, x := range s.files {
		errs = append(errs, x.close(), s.fs.Remove(s.path(x.name)))
	}
	s.files, s.created, s.dropped = nil, time.Time{}, false
	errs = append(errs, s.fs.SyncDir(s.cfg.Dir))
	s.log.Warn("index reset; it is rebuilt from the commitlog")
	return errors.Join(errs...)
}
