package indexfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// errBadHeader marks a header no put could have written (a torn page):
// Open drops the file rather than fail, the store rebuilds the index.
var errBadHeader = errors.New("header out of range")

// recoverChunk is the read size of the recovery scans.
const recoverChunk = 64 << 10

// openFile opens an existing index file and loads its header.
func (s *Store) openFile(name string) (*indexFile, error) {
	path := s.path(name)
	f, err := s.fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("indexfile: open %s: %w", path, err)
	}
	x := &indexFile{name: name, f: f, slotNum: int64(s.cfg.SlotNum), indexNum: int32(s.cfg.IndexNum)}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("indexfile: stat %s: %w", path, err)
	}
	if full := s.cfg.fileSize(); fi.Size() != full {
		if fi.Size() > full {
			f.Close()
			return nil, fmt.Errorf("%w: %s has %d bytes, want %d (SlotNum/IndexNum changed?)", ErrCorrupt, path, fi.Size(), full)
		}
		// A crash between creating and sizing the file: the rest is zeros.
		if err := f.Truncate(full); err != nil {
			f.Close()
			return nil, fmt.Errorf("indexfile: size %s: %w", path, err)
		}
	}
	var b [HeaderSize]byte
	if err := readFull(f, b[:], 0); err != nil {
		f.Close()
		return nil, err
	}
	x.hdr = decodeHeader(b[:])
	x.mmap(s.cfg.fileSize(), s.log)
	if x.hdr.indexCount > x.indexNum {
		x.close()
		return nil, fmt.Errorf("%w: %w: %s counts %d entries, more than %d", ErrCorrupt, errBadHeader, path, x.hdr.indexCount, x.indexNum)
	}
	return x, nil
}

// repairSlots makes x consistent with its header after a crash: if a slot
// points at an entry the header does not count, the slots are rebuilt from
// the counted entries, whose chains (prev always points lower) are intact.
func (s *Store) repairSlots(x *indexFile) error {
	ok, err := s.slotsConsistent(x)
	if err != nil || ok {
		return err
	}
	s.log.Warn("rebuilding slots after crash", "file", x.name, "entries", x.hdr.indexCount-1)
	slots := make([]byte, x.slotNum*SlotSize)
	var filled int32
	buf := make([]byte, recoverChunk/EntrySize*EntrySize)
	for n := int32(1); n < x.hdr.indexCount; {
		k := min(int32(len(buf)/EntrySize), x.hdr.indexCount-n)
		b := buf[:k*EntrySize]
		if err := x.read(b, x.entryPos(n)); err != nil {
			return err
		}
		for i := range k {
			h := int32(binary.BigEndian.Uint32(b[i*EntrySize:]))
			p := int64(h) % x.slotNum * SlotSize
			if h < 0 {
				continue // cannot be a key hash: not a real entry
			}
			if binary.BigEndian.Uint32(slots[p:]) == 0 {
				filled++
			}
			binary.BigEndian.PutUint32(slots[p:], uint32(n+i))
		}
		n += k
	}
	if _, err := x.f.WriteAt(slots, HeaderSize); err != nil {
		return fmt.Errorf("indexfile: write slots %s: %w", x.name, err)
	}
	x.hdr.slotCount = filled
	x.dirty = true
	return x.flush()
}

// slotsConsistent reports whether every slot is empty or points at a
// counted entry.
func (s *Store) slotsConsistent(x *indexFile) (bool, error) {
	buf := make([]byte, recoverChunk)
	end := HeaderSize + x.slotNum*SlotSize
	for pos := int64(HeaderSize); pos < end; {
		b := buf[:min(int64(len(buf)), end-pos)]
		if err := x.read(b, pos); err != nil {
			return false, err
		}
		for i := 0; i < len(b); i += SlotSize {
			v := int32(binary.BigEndian.Uint32(b[i:]))
			if v < 0 || v >= x.hdr.indexCount {
				return false, nil
			}
		}
		pos += int64(len(b))
	}
	return true, nil
}
