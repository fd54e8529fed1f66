package dledgertest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/raftmq/raftmq/internal/vfs"
)

// Target names the files TearPage damages.
type Target int

const (
	// Segment is a commitlog segment file (*.log).
	Segment Target = iota
	// ConsumeQueue is a consumequeue file (needs Options.OpenStore's
	// store layout: <Dir>/store/consumequeue).
	ConsumeQueue
	// Index is a key index file (<Dir>/store/index).
	Index
)

func (t Target) String() string {
	return [...]string{"segment", "consumequeue", "index"}[t]
}

// PageSize is the unit TearPage damages.
const PageSize = 4096

// disk is where member i keeps its files: its MemFS for the commitlog
// when it has one, else the real disk.
func (c *Cluster) disk(i int, t Target) (vfs.FS, string) {
	m := c.members[i]
	if c.opts.OpenStore != nil {
		return vfs.OS, filepath.Join(m.Dir, "store", [...]string{"commitlog", "consumequeue", "index"}[t])
	}
	if t != Segment {
		c.t.Fatalf("dledgertest: %v files need Options.OpenStore", t)
	}
	if m.FS != nil {
		return m.FS, filepath.Join(m.Dir, "commitlog")
	}
	return vfs.OS, filepath.Join(m.Dir, "commitlog")
}

// record is one commitlog record found on disk.
type record struct {
	file      string
	pos, size int64
	index     uint64
}

// FlipBit flips one random bit of one random record in node i's
// commitlog, among the records of raft index lo..hi, and syncs it, so the
// damage is what the disk holds: a bit flip in synced data, anywhere in
// the log. hi 0 means up to the record before the last one on disk: the
// middle of the log, where an intact record follows the damage (a flip in
// the very last record of a node that crashed cannot be told from a torn
// write; see docs/RELIABILITY.md). The node must be stopped. It returns
// the raft index of the record hit, or 0 when no record is in range. It
// reads the segment format of commitlog/doc.go (frozen) on its own.
func (c *Cluster) FlipBit(i int, rng *rand.Rand, lo, hi uint64) uint64 {
	c.t.Helper()
	c.mustBeStopped(i)
	fsys, dir := c.disk(i, Segment)
	recs := c.records(fsys, dir)
	if hi == 0 && len(recs) > 0 {
		hi = recs[len(recs)-1].index - 1
	}
	var in []record
	for _, r := range recs {
		if r.index >= lo && r.index <= hi {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		return 0
	}
	r := in[rng.Intn(len(in))]
	bit := rng.Int63n(r.size * 8)
	c.patch(fsys, r.file, r.pos+bit/8, func(b []byte) { b[0] ^= 1 << (bit % 8) }, 1)
	c.log.Warn("dledgertest: flipped a bit", "node", c.members[i].ID, "file", r.file, "index", r.index, "byte", r.pos+bit/8)
	return r.index
}

// TearPage overwrites one random 4 KiB page that holds data, in a random
// file of target on node i, with zeros or garbage (even odds) and syncs
// it: a torn page. In segments it spares the page of the log's last
// record, for FlipBit's reason. The node must be stopped. It returns the
// file and the page's offset, or "" when no file of target holds data.
func (c *Cluster) TearPage(i int, rng *rand.Rand, target Target) (string, int64) {
	c.t.Helper()
	c.mustBeStopped(i)
	fsys, dir := c.disk(i, target)
	var files []string
	for _, f := range walk(fsys, dir) {
		if target != Segment || strings.HasSuffix(f, ".log") {
			files = append(files, f)
		}
	}
	rng.Shuffle(len(files), func(a, b int) { files[a], files[b] = files[b], files[a] })
	var tail record
	if recs := c.records(fsys, dir); target == Segment && len(recs) > 0 {
		tail = recs[len(recs)-1]
	}
	for _, f := range files {
		pages := c.dataPages(fsys, f)
		if f == tail.file {
			pages = slices.DeleteFunc(pages, func(off int64) bool { return off+PageSize > tail.pos })
		}
		if len(pages) == 0 {
			continue
		}
		off := pages[rng.Intn(len(pages))]
		garbage := rng.Intn(2) == 0
		c.patch(fsys, f, off, func(b []byte) {
			for k := range b {
				b[k] = 0
				if garbage {
					b[k] = byte(rng.Intn(256))
				}
			}
		}, PageSize)
		c.log.Warn("dledgertest: tore a page", "node", c.members[i].ID, "file", f, "offset", off, "garbage", garbage)
		return f, off
	}
	return "", 0
}

func (c *Cluster) mustBeStopped(i int) {
	c.t.Helper()
	if c.Node(i) != nil {
		c.t.Fatalf("dledgertest: %s must be stopped to damage its disk", c.members[i].ID)
	}
}

// walk lists the files under dir, sorted; a missing dir holds none.
func walk(fsys vfs.FS, dir string) []string {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if fi, err := fsys.Stat(p); err == nil && fi.IsDir() {
			out = append(out, walk(fsys, p)...)
		} else if err == nil {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// records walks every segment file of dir record by record.
func (c *Cluster) records(fsys vfs.FS, dir string) []record {
	var out []record
	for _, f := range walk(fsys, dir) {
		if !strings.HasSuffix(f, ".log") {
			continue
		}
		b := c.readAll(fsys, f)
		for pos := int64(0); pos+38 <= int64(len(b)); {
			n := int64(binary.LittleEndian.Uint32(b[pos:]))
			if n < 30 || pos+8+n > int64(len(b)) {
				break
			}
			out = append(out, record{file: f, pos: pos, size: 8 + n, index: binary.LittleEndian.Uint64(b[pos+8:])})
			pos += 8 + n
		}
	}
	return out
}

// dataPages returns the offsets of the pages of f that are not all zero.
func (c *Cluster) dataPages(fsys vfs.FS, f string) []int64 {
	fl, err := fsys.OpenFile(f, os.O_RDONLY, 0)
	if err != nil {
		c.t.Fatalf("dledgertest: open %s: %v", f, err)
	}
	defer fl.Close()
	var out []int64
	buf := make([]byte, PageSize)
	for off := int64(0); ; off += PageSize {
		n, err := fl.ReadAt(buf, off)
		for _, x := range buf[:n] {
			if x != 0 {
				out = append(out, off)
				break
			}
		}
		if err != nil {
			return out
		}
	}
}

func (c *Cluster) readAll(fsys vfs.FS, f string) []byte {
	fl, err := fsys.OpenFile(f, os.O_RDONLY, 0)
	if err != nil {
		c.t.Fatalf("dledgertest: open %s: %v", f, err)
	}
	defer fl.Close()
	b, err := io.ReadAll(fl)
	if err != nil {
		c.t.Fatalf("dledgertest: read %s: %v", f, err)
	}
	return b
}

// patch reads up to n bytes of f at off (never past its end: files of
// fixed size must keep it), lets fn change them, writes them back and
// syncs.
func (c *Cluster) patch(fsys vfs.FS, f string, off int64, fn func([]byte), n int) {
	fl, err := fsys.OpenFile(f, os.O_RDWR, 0)
	if err != nil {
		c.t.Fatalf("dledgertest: open %s: %v", f, err)
	}
	defer fl.Close()
	fi, err := fl.Stat()
	if err != nil {
		c.t.Fatalf("dledgertest: stat %s: %v", f, err)
	}
	b := make([]byte, min(int64(n), fi.Size()-off))
	if _, err := fl.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		c.t.Fatalf("dledgertest: read %s: %v", f, err)
	}
	fn(b)
	if _, err := fl.WriteAt(b, off); err != nil {
		c.t.Fatalf("dledgertest: write %s: %v", f, err)
	}
	if err := fl.Sync(); err != nil {
		c.t.Fatal(fmt.Errorf("dledgertest: sync %s: %w", f, err))
	}
}
