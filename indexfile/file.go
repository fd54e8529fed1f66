package indexfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/internal/vfs"
)

// header is the in-memory copy of a file's header.
type header struct {
	beginTS, endTS   int64
	beginPhy, endPhy int64
	slotCount        int32
	indexCount       int32 // next entry number; starts at 1
}

func (h *header) encode(b []byte) {
	binary.BigEndian.PutUint64(b[0:], uint64(h.beginTS))
	binary.BigEndian.PutUint64(b[8:], uint64(h.endTS))
	binary.BigEndian.PutUint64(b[16:], uint64(h.beginPhy))
	binary.BigEndian.PutUint64(b[24:], uint64(h.endPhy))
	binary.BigEndian.PutUint32(b[32:], uint32(h.slotCount))
	binary.BigEndian.PutUint32(b[36:], uint32(h.indexCount))
}

func decodeHeader(b []byte) header {
	h := header{
		beginTS:    int64(binary.BigEndian.Uint64(b[0:])),
		endTS:      int64(binary.BigEndian.Uint64(b[8:])),
		beginPhy:   int64(binary.BigEndian.Uint64(b[16:])),
		endPhy:     int64(binary.BigEndian.Uint64(b[24:])),
		slotCount:  int32(binary.BigEndian.Uint32(b[32:])),
		indexCount: int32(binary.BigEndian.Uint32(b[36:])),
	}
	if h.indexCount <= 0 {
		h.indexCount = 1
	}
	return h
}

// entry is one decoded index entry.
type entry struct {
	keyHash  int32
	phy      int64
	timeDiff int32
	prev     int32
}

func decodeEntry(b []byte) entry {
	return entry{
		keyHash:  int32(binary.BigEndian.Uint32(b[0:])),
		phy:      int64(binary.BigEndian.Uint64(b[4:])),
		timeDiff: int32(binary.BigEndian.Uint32(b[12:])),
		prev:     int32(binary.BigEndian.Uint32(b[16:])),
	}
}

// indexFile is one open index file.
type indexFile struct {
	name     string
	f        vfs.File
	slotNum  int64
	indexNum int32
	hdr      header
	dirty    bool
	// m maps the whole file shared when the FS supports it: a query then
	// reads memory instead of making a syscall per entry (see
	// docs/BENCHMARKS.md). With writable, puts store through it too;
	// otherwise they go through WriteAt, which a shared mapping sees at
	// once. Either way flush's fsync makes them durable.
	m        []byte
	writable bool
	scratch  [EntrySize]byte // Put's buffer; Put holds the store's write lock
}

func (x *indexFile) slotPos(hash int32) int64 { return HeaderSize + int64(hash)%x.slotNum*SlotSize }

func (x *indexFile) entryPos(n int32) int64 {
	return HeaderSize + x.slotNum*SlotSize + int64(n)*EntrySize
}

func (x *indexFile) full() bool { return x.hdr.indexCount >= x.indexNum }

func (x *indexFile) empty() bool { return x.hdr.indexCount <= 1 }

// put adds one entry, as RocketMQ's IndexFile.putKey.
func (x *indexFile) put(key string, phy, ts int64) error {
	hash := keyHash(key)
	sp := x.slotPos(hash)
	b := x.scratch[:]
	if err := x.read(b[:SlotSize], sp); err != nil {
		return err
	}
	prev := int32(binary.BigEndian.Uint32(b))
	if prev <= 0 || prev >= x.hdr.indexCount {
		prev = 0
	}
	n := x.hdr.indexCount
	binary.BigEndian.PutUint32(b[0:], uint32(hash))
	binary.BigEndian.PutUint64(b[4:], uint64(phy))
	binary.BigEndian.PutUint32(b[12:], uint32(x.timeDiff(ts)))
	binary.BigEndian.PutUint32(b[16:], uint32(prev))
	if err := x.write(b, x.entryPos(n)); err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b, uint32(n))
	if err := x.write(b[:SlotSize], sp); err != nil {
		return err
	}
	if n == 1 {
		x.hdr.beginPhy, x.hdr.beginTS = phy, ts
	}
	if prev == 0 {
		x.hdr.slotCount++
	}
	x.hdr.indexCount++
	x.hdr.endPhy, x.hdr.endTS = phy, ts
	x.dirty = true
	return nil
}

// write stores b at pos: through the writable mapping when there is one (a
// copy instead of a syscall; two per put), else with WriteAt.
func (x *indexFile) write(b []byte, pos int64) (err error) {
	if !x.writable {
		if _, err := x.f.WriteAt(b, pos); err != nil {
			return fmt.Errorf("indexfile: write %s: %w", x.name, err)
		}
		return nil
	}
	// The file is sparse: a store the kernel cannot back (no space left
	// for a page of it) faults; that becomes this put's error, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("indexfile: write %s at %d through the mapping: %v", x.name, pos, r)
		}
	}()
	copy(x.m[pos:], b)
	return nil
}

func (x *indexFile) timeDiff(ts int64) int64 {
	if x.empty() || x.hdr.beginTS <= 0 {
		return 0
	}
	d := (ts - x.hdr.beginTS) / 1000
	return min(max(d, 0), math.MaxInt32)
}

// overlaps reports whether the file may hold entries stored in [begin,end].
func (x *indexFile) overlaps(begin, end int64) bool {
	return !x.empty() && x.hdr.beginTS <= end && x.hdr.endTS >= begin
}

// collect appends to dst the commit offsets of the entries of hash stored
// in [begin,end], newest first, until dst holds max. An entry's time is
// known to the second, so it matches when its second overlaps the range.
func (x *indexFile) collect(dst []int64, hash int32, begin, end int64, max int) ([]int64, error) {
	var b [EntrySize]byte
	if err := x.read(b[:SlotSize], x.slotPos(hash)); err != nil {
		return dst, err
	}
	n := int32(binary.BigEndian.Uint32(b[:]))
	for n > 0 && n < x.hdr.indexCount && len(dst) < max {
		if err := x.read(b[:], x.entryPos(n)); err != nil {
			return dst, err
		}
		e := decodeEntry(b[:])
		if e.timeDiff < 0 {
			break
		}
		t := x.hdr.beginTS + int64(e.timeDiff)*1000
		if e.keyHash == hash && t+999 >= begin && t <= end {
			dst = append(dst, e.phy)
		}
		// prev < n also guards against a cycle in a damaged file.
		if e.prev <= 0 || e.prev >= n || t+999 < begin {
			break
		}
		n = e.prev
	}
	return dst, nil
}

// flush syncs entries before the header that counts them.
func (x *indexFile) flush() error {
	if !x.dirty {
		return nil
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("indexfile: sync %s: %w", x.name, err)
	}
	var b [HeaderSize]byte
	x.hdr.encode(b[:])
	if _, err := x.f.WriteAt(b[:], 0); err != nil {
		return fmt.Errorf("indexfile: write header %s: %w", x.name, err)
	}
	if err := x.f.Sync(); err != nil {
		return fmt.Errorf("indexfile: sync %s: %w", x.name, err)
	}
	x.dirty = false
	return nil
}

// read fills b from pos, from the mapping if there is one.
func (x *indexFile) read(b []byte, pos int64) error {
	if x.m != nil {
		copy(b, x.m[pos:])
		return nil
	}
	return readFull(x.f, b, pos)
}

// mmap maps x if its file supports it, for writing too when it can;
// failing that, reads use ReadAt and writes WriteAt, which is slower but
// equally correct. The file has its full size for as long as it is open.
func (x *indexFile) mmap(size int64, log hclog.Logger) {
	if size > math.MaxInt {
		return
	}
	if wm, ok := x.f.(vfs.WritableMmapper); ok {
		if m, err := wm.MmapWritable(0, int(size)); err == nil {
			x.m, x.writable = m, true
			return
		}
	}
	mm, ok := x.f.(vfs.Mmapper)
	if !ok {
		return
	}
	m, err := mm.Mmap(0, int(size))
	if err != nil {
		log.Debug("reading without mmap", "file", x.name, "error", err)
		return
	}
	x.m = m
}

// close unmaps and closes x.
func (x *indexFile) close() error {
	var err error
	if x.m != nil {
		err = vfs.Munmap(x.m)
		x.m = nil
	}
	return errors.Join(err, x.f.Close())
}

func readFull(f vfs.File, b []byte, pos int64) error {
	n, err := f.ReadAt(b, pos)
	if err == io.EOF {
		clear(b[n:])
		return nil
	}
	if err != nil {
		return fmt.Errorf("indexfile: read %s: %w", f.Name(), err)
	}
	return nil
}
