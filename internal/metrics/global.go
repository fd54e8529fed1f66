package metrics

import (
	"sync"

	gometrics "github.com/armon/go-metrics"
)

var (
	globalOnce sync.Once
	global     *Sink
)

// Global is the process-wide sink behind go-metrics' global instance,
// where hashicorp/raft emits (raft_* series). The first call installs it.
// Several raft nodes in one process (tests, raftmq dev) share it.
func Global() *Sink {
	globalOnce.Do(func() {
		global = NewSink(nil)
		_, _ = gometrics.NewGlobal(Config(), global)
	})
	return global
}

// Config is the go-metrics configuration raftmq uses: no service or host
// prefix (the series are named as given), no runtime sampling goroutine,
// timers in milliseconds.
func Config() *gometrics.Config {
	c := gometrics.DefaultConfig("")
	c.EnableHostname = false
	c.EnableRuntimeMetrics = false
	c.HostName = ""
	return c
}

// New is a go-metrics instance over sink with Config.
func New(sink *Sink) *gometrics.Metrics {
	m, _ := gometrics.New(Config(), sink) // New fails for no configuration
	return m
}
