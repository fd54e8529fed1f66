package commitlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftmq/raftmq/internal/vfs"
)

// TestConcurrentReadersWriterRetention runs pulls and raft reads against a
// writer that appends, truncates and re-appends, and retention deleting
// mapped segments. Every byte a reader gets must be the right byte.
func TestConcurrentReadersWriterRetention(t *testing.T) {
	cfg := msgConfig(vfs.OS, t.TempDir())
	var floor atomic.Uint64
	cfg.Retention.Floor = floor.Load
	cfg.Retention.DiskUsage = func(string) (float64, error) { return 0.87, nil } // above force
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	logs, msgs := messageEntries(600, 0)
	byIndex := map[uint64]*raft.Log{}
	for _, lg := range logs {
		byIndex[lg.Index] = lg
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	errc := make(chan error, 8)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			var got raft.Log
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				m := msgs[(i*7+r)%len(msgs)]
				if b, err := l.ReadMessage(nil, m.co, len(m.data)); err == nil {
					if !bytes.Equal(b, m.data) {
						report(errors.New("ReadMessage returned wrong bytes"))
					}
				} else if !errors.Is(err, ErrOffsetNotFound) {
					report(err)
				}
				idx := uint64(1 + (i*13+r)%len(logs))
				if err := l.GetLog(idx, &got); err == nil {
					if err := sameLog(&got, byIndex[idx]); err != nil {
						report(err)
					}
				} else if !errors.Is(err, raft.ErrLogNotFound) {
					report(err)
				}
				reads.Add(1)
			}
		}(r)
	}

	for i := 0; i < len(logs); i += 10 {
		if err := l.StoreLogs(logs[i : i+10]); err != nil {
			t.Fatal(err)
		}
		if i%100 == 90 { // a conflicting suffix, replaced by the same entries
			if err := l.DeleteRange(uint64(i-5), uint64(i+10)); err != nil {
				t.Fatal(err)
			}
			if err := l.StoreLogs(logs[i-6 : i+10]); err != nil {
				t.Fatal(err)
			}
		}
		if i%200 == 150 {
			floor.Store(uint64(i))
			if _, err := l.RunRetentionOnce(time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, func() bool { return reads.Load() > 300 })
	close(stop)
	wg.Wait()
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if first, _ := l.FirstIndex(); first == 1 {
		t.Fatal("retention deleted nothing")
	}
}

// TestPreallocatesNextSegment: the next segment file exists at full size
// before the roll that uses it, and is prepared again after.
func TestPreallocatesNextSegment(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(vfs.OS, dir)
	cfg.SegmentSize = 64 << 10
	l := mustOpen(t, cfg)
	defer closeLog(t, l)
	next := filepath.Join(dir, nextName)
	ready := func() bool {
		fi, err := os.Stat(next)
		return err == nil && fi.Size() == cfg.SegmentSize && l.pre.move(fileReady, fileReady)
	}
	waitFor(t, ready)
	storeRange(t, l, 1, 2000, 20)
	if n := len(segmentBases(t, vfs.OS, dir)); n < 3 {
		t.Fatalf("%d segments, want a few rolls", n)
	}
	waitFor(t, ready)
	checkRange(t, l, 1, 2000)
}
