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
	ready bool // nextName exists, synced, and nobody is writing it
}

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

// take claims the prepared file; false means the caller creates its own.
func (p *preallocator) take() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	ok := p.ready
	p.ready = false
	return ok
}

func (p *preallocator) prepare() {
	p.mu.Lock()
	ready := p.ready
	p.mu.Unlock()
	if ready {
		return
	}
	// A roll that found nothing ready may race with this; it never touches
	// nextName unless ready, so the file is ours until ready is set.
	f, err := p.fs.OpenFile(p.name, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		p.logger.Warn("preallocate next segment", "error", err)
		return
	}
	if pa, ok := f.(vfs.Preallocator); ok {
		err = pa.Preallocate(p.size)
	}
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		p.logger.Warn("preallocate next segment", "error", err)
		return
	}
	p.mu.Lock()
	p.ready = true
	p.mu.Unlock()
}
