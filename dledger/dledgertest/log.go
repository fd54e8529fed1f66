package dledgertest

import (
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestLogger returns an hclog logger writing into t.Log until the test
// ends. RAFTMQ_TEST_LOG sets the level (default info).
func TestLogger(t testing.TB) hclog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(w.stop)
	level := hclog.LevelFromString(os.Getenv("RAFTMQ_TEST_LOG"))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return hclog.New(&hclog.LoggerOptions{Output: w, Level: level, TimeFormat: "15:04:05.000"})
}

type tWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *tWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

var _ io.Writer = (*tWriter)(nil)
