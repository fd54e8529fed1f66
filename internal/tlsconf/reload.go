package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// watched is the set of files a loaded value came from and how they were
// when it was loaded; changed reports whether any differs now.
type watched struct {
	names []string
	infos []os.FileInfo
}

func stat(names ...string) watched {
	w := watched{names: names, infos: make([]os.FileInfo, len(names))}
	for i, n := range names {
		w.infos[i], _ = os.Stat(n)
	}
	return w
}

func (w watched) changed() bool {
	for i, n := range w.names {
		fi, err := os.Stat(n)
		old := w.infos[i]
		switch {
		case err != nil || old == nil:
			if (err != nil) != (old == nil) {
				return true
			}
		case !os.SameFile(fi, old), fi.Size() != old.Size(), !fi.ModTime().Equal(old.ModTime()):
			return true
		}
	}
	return false
}

// reloader holds a value loaded from files and loads it again, at most
// once per interval, when the files changed. A failed reload keeps the
// value it has and is logged; the failed state is remembered so the same
// broken files are not logged on every check.
type reloader[T any] struct {
	load     func() (T, error)
	names    []string
	interval time.Duration
	log      hclog.Logger
	now      func() time.Time

	mu      sync.Mutex
	val     T
	files   watched // what val (or the last failed attempt) was read from
	checked time.Time
}

func newReloader[T any](load func() (T, error), interval time.Duration, log hclog.Logger, names ...string) (*reloader[T], error) {
	if interval == 0 {
		interval = DefaultCheckInterval
	}
	r := &reloader[T]{load: load, names: names, interval: interval, log: log, now: time.Now}
	files := stat(names...)
	v, err := load()
	if err != nil {
		return nil, err
	}
	r.val, r.files, r.checked = v, files, r.now()
	return r, nil
}

func (r *reloader[T]) current() T {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.interval > 0 && now.Sub(r.checked) < r.interval {
		return r.val
	}
	r.checked = now
	if !r.files.changed() {
		return r.val
	}
	files := stat(r.names...)
	v, err := r.load()
	r.files = files
	if err != nil {
		r.log.Error("reload failed, keeping the previous certificate", "files", r.names, "error", err)
		return r.val
	}
	r.val = v
	r.log.Info("reloaded", "files", r.names)
	return r.val
}

// keyPair is a certificate and key that follow their files.
type keyPair struct{ r *reloader[*tls.Certificate] }

func newKeyPair(certFile, keyFile string, interval time.Duration, log hclog.Logger) (*keyPair, error) {
	r, err := newReloader(func() (*tls.Certificate, error) {
		return loadKeyPair(certFile, keyFile, time.Now())
	}, interval, log, certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &keyPair{r}, nil
}

func (k *keyPair) current() *tls.Certificate { return k.r.current() }

// caPool is a CA bundle that follows its file.
type caPool struct{ r *reloader[*x509.CertPool] }

func newCAPool(file string, interval time.Duration, log hclog.Logger) (*caPool, error) {
	r, err := newReloader(func() (*x509.CertPool, error) { return loadCAPool(file) }, interval, log, file)
	if err != nil {
		return nil, err
	}
	return &caPool{r}, nil
}

func (c *caPool) current() *x509.CertPool { return c.r.current() }
