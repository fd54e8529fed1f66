package consumequeue

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/raftmq/raftmq/internal/vfs"
)

// model is a naive in-memory consumequeue: disk holds the valid entries
// still on disk (also those below min inside a retained file), files the
// start offsets of the files.
type model struct {
	per      int64
	disk     map[int64]Entry
	files    map[int64]bool
	min, max int64
	nextCO   int64
}

func (m *model) fileOf(off int64) int64 { return off - off%m.per }

func (m *model) append(e Entry) {
	m.disk[m.max] = e
	m.files[m.fileOf(m.max)] = true
	m.max++
}

func (m *model) firstAtLeast(co int64) int64 {
	for off := m.min; off < m.max; off++ {
		if m.disk[off].CommitOffset >= co {
			return off
		}
	}
	return m.max
}

func (m *model) truncate(co int64) {
	if newMax := m.firstAtLeast(co); newMax != m.max {
		m.truncateAt(newMax)
	}
}

func (m *model) truncateAt(newMax int64) {
	for off := newMax; off < m.max; off++ {
		delete(m.disk, off)
	}
	for f := range m.files {
		if f > m.fileOf(newMax) {
			delete(m.files, f)
		}
	}
	m.max = newMax
}

func (m *model) correct(minCO int64) {
	newMin := m.firstAtLeast(minCO)
	if newMin <= m.min {
		return
	}
	m.min = newMin
	last := slices.Max(slices.Collect(maps.Keys(m.files)))
	for f := range m.files {
		if f != last && f+m.per <= newMin {
			delete(m.files, f)
			for off := f; off < f+m.per; off++ {
				delete(m.disk, off)
			}
		}
	}
}

func (m *model) reopen() {
	switch {
	case len(m.files) == 0:
		m.min, m.max = 0, 0
	case len(m.disk) == 0:
		last := slices.Max(slices.Collect(maps.Keys(m.files)))
		m.min, m.max = last, last
	default:
		keys := slices.Collect(maps.Keys(m.disk))
		m.min, m.max = slices.Min(keys), slices.Max(keys)+1
	}
}

func TestModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		per := rapid.IntRange(1, 5).Draw(rt, "per")
		fs := vfs.NewMem()
		s, err := Open(testConfig(fs, per))
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { s.Close() }()
		q, _ := s.Queue("T", 0)
		m := &model{per: int64(per), disk: map[int64]Entry{}, files: map[int64]bool{}}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 10).Draw(rt, "op"); op {
			case 0, 1, 2, 3:
				m.nextCO += rapid.Int64Range(1, 50).Draw(rt, "delta")
				e := Entry{CommitOffset: m.nextCO, Size: 1, TagsCode: m.nextCO * 7}
				if err := q.Append(m.max, e); err != nil {
					rt.Fatalf("Append(%d): %v", m.max, err)
				}
				m.append(e)
			case 10:
				// A batch that replays a tail of what is stored and adds new
				// entries, possibly across files.
				back := rapid.Int64Range(0, m.max-m.min).Draw(rt, "batchBack")
				var es []Entry
				for off := m.max - back; off < m.max; off++ {
					es = append(es, m.disk[off])
				}
				var fresh []Entry
				for range rapid.IntRange(1, 12).Draw(rt, "batchLen") {
					m.nextCO += rapid.Int64Range(1, 50).Draw(rt, "delta")
					fresh = append(fresh, Entry{CommitOffset: m.nextCO, Size: 1, TagsCode: m.nextCO * 7})
				}
				if err := q.AppendBatch(m.max-back, append(es, fresh...)); err != nil {
					rt.Fatalf("AppendBatch(%d, %d replayed + %d): %v", m.max-back, back, len(fresh), err)
				}
				for _, e := range fresh {
					m.append(e)
				}
			case 4:
				if m.max > m.min {
					off := rapid.Int64Range(m.min, m.max-1).Draw(rt, "replay")
					if err := q.Append(off, m.disk[off]); err != nil {
						rt.Fatalf("replay Append(%d): %v", off, err)
					}
					// A stale entry (the replayed log says otherwise) is
					// rewritten, and what followed it dropped.
					bad := m.disk[off]
					bad.TagsCode++
					if err := q.Append(off, bad); err != nil {
						rt.Fatalf("repairing Append(%d): %v", off, err)
					}
					m.truncateAt(off)
					m.append(bad)
				}
				if err := q.Append(m.max+1, Entry{CommitOffset: m.nextCO + 1, Size: 1}); !errors.Is(err, ErrGap) {
					rt.Fatalf("gap Append = %v", err)
				}
			case 5:
				co := rapid.Int64Range(0, m.nextCO+1).Draw(rt, "truncCO")
				if err := s.TruncateCommitOffset(co); err != nil {
					rt.Fatal(err)
				}
				m.truncate(co)
			case 6:
				co := rapid.Int64Range(0, m.nextCO+1).Draw(rt, "minCO")
				if err := s.CorrectMinOffset(co); err != nil {
					rt.Fatal(err)
				}
				m.correct(co)
			case 7:
				if m.min == m.max {
					off := rapid.Int64Range(0, 20).Draw(rt, "setMin")
					if err := q.SetMinOffset(off); err != nil {
						rt.Fatal(err)
					}
					m.min, m.max = off, off
					clear(m.disk)
					clear(m.files)
				}
			case 8, 9:
				if err := s.Flush(); err != nil {
					rt.Fatal(err)
				}
				s.Close()
				if s, err = Open(testConfig(fs, per)); err != nil {
					rt.Fatal(err)
				}
				if q, _ = s.Lookup("T", 0); q == nil {
					q, _ = s.Queue("T", 0)
				}
				m.reopen()
			}
			check(rt, q, m)
		}
	})
}

func check(rt *rapid.T, q *Queue, m *model) {
	if q.MinOffset() != m.min || q.MaxOffset() != m.max {
		rt.Fatalf("range = [%d,%d), model [%d,%d)", q.MinOffset(), q.MaxOffset(), m.min, m.max)
	}
	got, err := q.Read(m.min, int(m.max-m.min), nil)
	if err != nil {
		rt.Fatal(err)
	}
	for i, e := range got {
		if want := m.disk[m.min+int64(i)]; e != want {
			rt.Fatalf("entry %d = %+v, model %+v", m.min+int64(i), e, want)
		}
	}
	if len(got) != int(m.max-m.min) {
		rt.Fatalf("Read returned %d entries, want %d", len(got), m.max-m.min)
	}
}
