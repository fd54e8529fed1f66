package vfs

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, fsys FS, name string, data []byte, sync bool) File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func readAll(t *testing.T, fsys FS, name string) []byte {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFSContract runs the same behaviour checks on the real and the
// in-memory file system, so MemFS cannot drift from what OS does.
func TestFSContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   FS
		root string
	}{{"os", OS, t.TempDir()}, {"mem", NewMem(), "/data"}} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, root := tc.fs, tc.root
			if err := fsys.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(root, "a", "b", "f")
			f := writeFile(t, fsys, p, []byte("hello world"), true)
			buf := make([]byte, 5)
			if n, err := f.ReadAt(buf, 6); err != nil || n != 5 || string(buf) != "world" {
				t.Fatalf("ReadAt = %d %v %q", n, err, buf)
			}
			if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF {
				t.Fatalf("short ReadAt = %d %v, want 3 EOF", n, err)
			}
			if _, err := f.WriteAt([]byte("W"), 6); err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(20); err != nil {
				t.Fatal(err)
			}
			st, err := f.Stat()
			if err != nil || st.Size() != 20 {
				t.Fatalf("Stat = %v %v, want size 20", st, err)
			}
			f.Close()
			want := append([]byte("hello World"), make([]byte, 9)...)
			if got := readAll(t, fsys, p); !bytes.Equal(got, want) {
				t.Fatalf("content = %q, want %q", got, want)
			}
			if _, err := fsys.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644); !errors.Is(err, os.ErrExist) {
				t.Fatalf("O_EXCL on existing = %v, want ErrExist", err)
			}
			q := filepath.Join(root, "a", "g")
			if err := fsys.Rename(p, q); err != nil {
				t.Fatal(err)
			}
			names, err := fsys.ReadDir(filepath.Join(root, "a"))
			if err != nil || len(names) != 2 || names[0] != "b" || names[1] != "g" {
				t.Fatalf("ReadDir = %v %v, want [b g]", names, err)
			}
			if err := fsys.SyncDir(filepath.Join(root, "a")); err != nil {
				t.Fatal(err)
			}
			if err := fsys.Remove(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Remove missing = %v, want ErrNotExist", err)
			}
			if err := fsys.Remove(q); err != nil {
				t.Fatal(err)
			}
			if _, err := fsys.Stat(q); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Stat removed = %v", err)
			}
			if err := fsys.RemoveAll(filepath.Join(root, "a")); err != nil {
				t.Fatal(err)
			}
			if _, err := fsys.Stat(filepath.Join(root, "a", "b")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Stat after RemoveAll = %v", err)
			}
		})
	}
}

func TestCrashCloneKeepsOnlySynced(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f := writeFile(t, m, "/d/synced", []byte("abc"), true)
	if _, err := f.Write([]byte("def")); err != nil { // not synced
		t.Fatal(err)
	}
	writeFile(t, m, "/d/nosyncdir", []byte("x"), true)

	// Before SyncDir no entry is durable.
	if _, err := m.CrashClone().Stat("/d/synced"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("entry durable before SyncDir: %v", err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, m, "/d/late", []byte("late"), true) // created after SyncDir

	c := m.CrashClone()
	if got := readAll(t, c, "/d/synced"); string(got) != "abc" {
		t.Fatalf("synced file after crash = %q, want abc", got)
	}
	if _, err := c.Stat("/d/late"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file created after SyncDir survived: %v", err)
	}
	// The live FS still has everything.
	if got := readAll(t, m, "/d/synced"); string(got) != "abcdef" {
		t.Fatalf("live content = %q", got)
	}
	// A removal is durable only after SyncDir too.
	if err := m.Remove("/d/synced"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CrashClone().Stat("/d/synced"); err != nil {
		t.Fatalf("removal durable before SyncDir: %v", err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CrashClone().Stat("/d/synced"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removed file survived synced removal: %v", err)
	}
}

func TestFaultInjectors(t *testing.T) {
	m := NewMem()
	ff := NewFaultFS(m)
	f := writeFile(t, ff, "/seg", []byte("ok"), true)

	ff.Inject(FailOnce(OpSync, "seg", nil))
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Sync = %v, want injected", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("second Sync = %v, want nil (FailOnce)", err)
	}

	ff.Inject(ShortWrite("seg", 2, nil))
	n, err := f.Write([]byte("abcd"))
	if n != 2 || !errors.Is(err, ErrInjected) {
		t.Fatalf("short write = %d %v, want 2 injected", n, err)
	}
	if _, err := f.Write([]byte("Z")); err != nil {
		t.Fatalf("write after short write = %v", err)
	}
	if got := readAll(t, m, "/seg"); string(got) != "okabZ" {
		t.Fatalf("content = %q, want okabZ", got)
	}

	ff.Inject(FailAfter(OpWrite, "", 1, nil))
	if _, err := f.WriteAt([]byte("1"), 0); err != nil {
		t.Fatalf("first write = %v", err)
	}
	for i := 0; i < 3; i++ {
		if n, err := f.WriteAt([]byte("2"), 0); n != 0 || !errors.Is(err, ErrInjected) {
			t.Fatalf("write %d after okCalls = %d %v", i, n, err)
		}
	}
	ff.Inject(nil)
	if _, err := f.WriteAt([]byte("3"), 0); err != nil {
		t.Fatalf("write with no injector = %v", err)
	}
	ff.Inject(FailOnce(OpOpen, "other", nil))
	if _, err := ff.OpenFile("/seg", os.O_RDONLY, 0); err != nil {
		t.Fatalf("non-matching open = %v", err)
	}
	if _, err := ff.OpenFile("/other", os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, ErrInjected) {
		t.Fatalf("matching open = %v", err)
	}
}

func TestOSMmapAndPreallocate(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m")
	f := writeFile(t, OS, p, []byte("mapped bytes"), true)
	defer f.Close()
	b, err := f.(Mmapper).Mmap(0, 12)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "mapped bytes" {
		t.Fatalf("mmap = %q", b)
	}
	if err := Munmap(b); err != nil {
		t.Fatal(err)
	}
	if err := f.(Preallocator).Preallocate(1 << 20); err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if st.Size() < 12 {
		t.Fatalf("preallocate shrank the file: %d", st.Size())
	}
}

func TestOSMmapWritable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w")
	f := writeFile(t, OS, p, make([]byte, 4096), true)
	defer f.Close()
	b, err := f.(WritableMmapper).MmapWritable(0, 4096)
	if err != nil {
		t.Fatal(err)
	}
	copy(b[100:], "through the mapping")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 19)
	if _, err := f.ReadAt(got, 100); err != nil || string(got) != "through the mapping" {
		t.Fatalf("ReadAt after a mapped store = %q, %v", got, err)
	}
	if err := Munmap(b); err != nil {
		t.Fatal(err)
	}
	ff, err := NewFaultFS(OS).OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	if _, ok := ff.(WritableMmapper); ok {
		t.Fatal("FaultFS files must not offer writable mappings: their writes would bypass injection")
	}
}

// TestLosePower: the clone holds what was synced; afterwards the old FS
// and its open files refuse every write, sync and create, so nothing can
// become durable on a machine whose power is gone.
func TestLosePower(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f := writeFile(t, m, "/d/f", []byte("abc"), true)
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("def")); err != nil { // not synced
		t.Fatal(err)
	}
	c := m.LosePower()
	if got := readAll(t, c, "/d/f"); string(got) != "abc" {
		t.Fatalf("after power loss the file holds %q, want the synced abc", got)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, ErrPowerLost) {
		t.Fatalf("write after power loss = %v", err)
	}
	if err := f.Sync(); !errors.Is(err, ErrPowerLost) {
		t.Fatalf("sync after power loss = %v", err)
	}
	if _, err := m.OpenFile("/d/g", os.O_CREATE|os.O_RDWR, 0o644); !errors.Is(err, ErrPowerLost) {
		t.Fatalf("open after power loss = %v", err)
	}
	if err := m.SyncDir("/d"); !errors.Is(err, ErrPowerLost) {
		t.Fatalf("syncdir after power loss = %v", err)
	}
	g := writeFile(t, c, "/d/g", []byte("new"), true) // the clone is a working disk
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
