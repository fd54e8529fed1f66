package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Progress prints a live line with the count done, the total (if known)
// and the recent rate, every interval until Stop. On a terminal it
// rewrites one line; elsewhere it prints a line every 5 s.
type Progress struct {
	w     io.Writer
	label string
	total uint64
	done  *atomic.Uint64
	tty   bool
	stop  chan struct{}
	wg    sync.WaitGroup
}

// StartProgress starts printing the progress of done (out of total, 0 if
// unknown) to w under label. A nil w prints nothing.
func StartProgress(w io.Writer, label string, total uint64, done *atomic.Uint64) *Progress {
	p := &Progress{w: w, label: label, total: total, done: done, stop: make(chan struct{})}
	if w == nil {
		return p
	}
	p.tty = IsTerminal(w)
	every := 5 * time.Second
	if p.tty {
		every = 250 * time.Millisecond
	}
	p.wg.Add(1)
	go p.run(every)
	return p
}

func (p *Progress) run(every time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	last, lastAt := uint64(0), time.Now()
	for {
		select {
		case <-p.stop:
			if p.tty {
				fmt.Fprint(p.w, "\r\033[K")
			}
			return
		case now := <-t.C:
			n := p.done.Load()
			rate := float64(n-last) / now.Sub(lastAt).Seconds()
			last, lastAt = n, now
			line := fmt.Sprintf("%s %d msgs %8.0f msg/s", p.label, n, rate)
			if p.total > 0 {
				pct := 100 * float64(n) / float64(p.total)
				line = fmt.Sprintf("%s %s %5.1f%% %d/%d msgs %8.0f msg/s", p.label, bar(pct), pct, n, p.total, rate)
			}
			if p.tty {
				fmt.Fprint(p.w, "\r\033[K"+line)
			} else {
				fmt.Fprintln(p.w, line)
			}
		}
	}
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// bar draws pct (0..100) as a 30-cell bar.
func bar(pct float64) string {
	const cells = 30
	n := int(pct / 100 * cells)
	n = min(max(n, 0), cells)
	b := make([]byte, 0, cells+2)
	b = append(b, '[')
	for i := range cells {
		if i < n {
			b = append(b, '#')
		} else {
			b = append(b, '.')
		}
	}
	return string(append(b, ']'))
}

// Stop stops printing and clears the live line.
func (p *Progress) Stop() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	p.wg.Wait()
}
