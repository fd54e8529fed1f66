package commitlog

import (
	"os"
	"testing"

	"github.com/raftmq/raftmq/internal/vfs"
)

// TestEntryIndexRebuilt damages entry index files and checks that Open
// rebuilds them from the segments, whether the index is behind, ahead,
// missing or garbage, in the active segment or a sealed one.
func TestEntryIndexRebuilt(t *testing.T) {
	tests := []struct {
		name   string
		sealed bool
		damage func(t *testing.T, fs vfs.FS, name string)
	}{
		{"active missing", false, removeFile},
		{"active behind", false, truncateTo(entrySize)},
		{"active ahead", false, appendGarbage},
		{"active garbage", false, overwriteGarbage},
		{"sealed missing", true, removeFile},
		{"sealed behind", true, truncateTo(entrySize)},
		{"sealed ahead", true, appendGarbage},
		{"sealed garbage", true, overwriteGarbage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			cfg := msgConfig(fsys, testDir)
			l := mustOpen(t, cfg)
			logs, msgs := messageEntries(120, 0)
			for i := 0; i < len(logs); i += 5 {
				if err := l.StoreLogs(logs[i : i+5]); err != nil {
					t.Fatal(err)
				}
			}
			s := l.active()
			if tt.sealed {
				s = l.segs[1]
			}
			name := s.idx.Name()
			crashed := fsys.CrashClone() // an unclean stop: Open scans from the checkpoint
			closeLog(t, l)
			tt.damage(t, crashed, name)
			l = mustOpen(t, msgConfig(crashed, testDir))
			defer closeLog(t, l)
			if last, _ := l.LastIndex(); last != 120 {
				t.Fatalf("last = %d, want 120", last)
			}
			checkMessages(t, l, msgs)
			fi, err := crashed.Stat(name)
			if err != nil || fi.Size() != int64(l.segFor(s.base).count)*entrySize {
				t.Fatalf("index file %s: %v, %v; want %d records", name, fi, err, l.segFor(s.base).count)
			}
		})
	}
}

func removeFile(t *testing.T, fs vfs.FS, name string) {
	if err := fs.Remove(name); err != nil {
		t.Fatal(err)
	}
}

func truncateTo(size int64) func(*testing.T, vfs.FS, string) {
	return func(t *testing.T, fs vfs.FS, name string) {
		f, err := fs.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
	}
}

func appendGarbage(t *testing.T, fs vfs.FS, name string) {
	writeAtEnd(t, fs, name, false)
}

func overwriteGarbage(t *testing.T, fs vfs.FS, name string) {
	writeAtEnd(t, fs, name, true)
}

func writeAtEnd(t *testing.T, fs vfs.FS, name string, fromStart bool) {
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	at := fi.Size()
	if fromStart {
		at = 0
	}
	junk := make([]byte, 3*entrySize)
	for i := range junk {
		junk[i] = byte(i*31 + 7)
	}
	if _, err := f.WriteAt(junk, at); err != nil {
		t.Fatal(err)
	}
}
