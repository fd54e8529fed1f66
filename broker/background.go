package broker

import (
	"sync"
	"time"
)

// background runs a node's periodic and long-running work until stop.
// Its zero value is not ready: use newBackground.
type background struct {
	stop chan struct{}
	// mu orders starting goroutines against shutdown's wait: Serve may
	// still be starting them when Shutdown runs.
	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup
}

func newBackground() *background { return &background{stop: make(chan struct{})} }

// goRun runs fn until shutdown; fn must return when stop closes. Nothing
// starts once shutdown began.
func (bg *background) goRun(fn func(stop <-chan struct{})) {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if bg.closing {
		return
	}
	bg.wg.Add(1)
	go func() {
		defer bg.wg.Done()
		fn(bg.stop)
	}()
}

// every runs fn each interval until shutdown.
func (bg *background) every(interval time.Duration, fn func()) {
	bg.goRun(func(stop <-chan struct{}) {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				fn()
			}
		}
	})
}

// stopAll closes stop: nothing more starts, everything running is told to
// return (held pulls answer at once). Idempotent.
func (bg *background) stopAll() {
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if !bg.closing {
		bg.closing = true
		close(bg.stop)
	}
}

// wait stops everything and waits for it to return.
func (bg *background) wait() {
	bg.stopAll()
	bg.wg.Wait()
}
