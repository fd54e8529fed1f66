package commitlog

import (
	"errors"
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/internal/vfs"
)

// preallocator prepares the next segment file off the hot path: it
// creates nextName, reserves SegmentSize bytes with fallocate where the
// file system can, and syncs it, so a roll is a rename.
type preallocator struct {
	fs     vfs.FS
	name   string
	size   int64
	logger hclog.Logger
	wake   chan struct{}

	mu    sync.Mutex
	state int // one of the file states below
}

// The states of nextName. Only the goroutine moves idle → preparing →
// ready; only a roll moves ready → naming → idle, so the two never touch
// the file at the same time.
const (
	fileIdle      = iota // absent or stale; the goroutine may (re)create it
	filePreparing        // the goroutine is writing it
	fileReady            // synced and preallocated, waiting for a roll
	fileNaming           // a roll is renaming it to a segment
)

func newPreallocator(fsys vfs.FS, name string, size int64, logger hclog.Logger) *preallocator {
	return &preallocator{fs: fsys, name: name, size: size, logger: logger, wake: make(chan struct{}, 1)}
}

func (p *preallocator) start(wg *sync.WaitGroup, stop <-chan struct{}) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.request()
		for {
			select {
			case <-stop:
				return
			case <-p.wake:
				p.prepare()
			}
		}
	}()
}

// request asks for a file when none is ready; it never blocks.
func (p *preallocator) request() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take claims the prepared file for renaming; false means the caller
// creates its own. After a true take the caller must call named.
func (p *preallocator) take() bool {
	return p.move(fileReady, fileNaming)
}

// named ends a take: the file is gone, the next one may be prepared.
func (p *preallocator) named() {
	p.move(fileNaming, fileIdle)
	p.request()
}

func (p *preallocator) move(from, to int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != from {
		return false
	}
	p.state = to
	return true
}

func (p *preallocator) prepare() {
	if !p.move(fileIdle, filePreparing) {
		return
	}
	f, err := p.fs.OpenFile(p.name, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		p.logger.Warn("preallocate next segment", "error", err)
		p.move(filePreparing, fileIdle)
		return
	}
	if pa, ok := f.(vfs.Preallocator); ok {
		err = pa.Preallocate(p.size)
	}
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		// Without space a half-reserved file would only hold on to what
		// the log needs; a roll preallocates its own file (or refuses).
		p.logger.Warn("preallocate next segment", "error", err)
		if rerr := p.fs.Remove(p.name); rerr != nil {
			p.logger.Warn("remove unprepared next segment", "error", rerr)
		}
		p.move(filePreparing, fileIdle)
		return
	}
	p.move(filePreparing, fileReady)
}
