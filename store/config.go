package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/consumequeue"
	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/indexfile"
)

// ErrInvalidConfig wraps every problem Config.Validate finds.
var ErrInvalidConfig = errors.New("store: invalid config")

// Config configures a Store. Start from DefaultConfig.
type Config struct {
	// Dir holds commitlog/, consumequeue/ and index/.
	Dir string
	// CommitLog configures the commitlog: flush mode (SYNC_FLUSH by
	// default), segment size (1 GiB), retention. Open sets Dir, Span and
	// Logger.
	CommitLog commitlog.Config
	// ConsumeQueue configures the consumequeues; Open sets Dir and Logger.
	ConsumeQueue consumequeue.Config
	// Index configures the key index (its slot and entry counts); Open
	// sets Dir and Logger.
	Index indexfile.Config
	// CorrectInterval is how often the queues' start follows commitlog
	// retention (RocketMQ's cleanResourceInterval). Default 10 s.
	CorrectInterval time.Duration
	// Logger is the base logger; the store logs as Named("store"). Default
	// discards.
	Logger hclog.Logger
}

// DefaultConfig returns each part's defaults; Dir must still be set.
func DefaultConfig() Config {
	return Config{
		CommitLog:       commitlog.DefaultConfig(),
		ConsumeQueue:    consumequeue.DefaultConfig(),
		Index:           indexfile.DefaultConfig(),
		CorrectInterval: 10 * time.Second,
		Logger:          hclog.NewNullLogger(),
	}
}

// resolved returns c with every part's directory, span function and
// logger filled in from Dir and Logger.
func (c Config) resolved() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	c.Logger = c.Logger.Named("store")
	c.CommitLog.Dir = filepath.Join(c.Dir, "commitlog")
	c.CommitLog.Span = dledger.SpanFunc
	c.CommitLog.Logger = c.Logger
	c.ConsumeQueue.Dir = filepath.Join(c.Dir, "consumequeue")
	c.ConsumeQueue.Logger = c.Logger
	c.Index.Dir = filepath.Join(c.Dir, "index")
	c.Index.Logger = c.Logger
	return c
}

// Validate reports every problem at once, the parts' included.
func (c Config) Validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, fmt.Errorf("%w: Dir is empty", ErrInvalidConfig))
	}
	if c.CorrectInterval <= 0 {
		errs = append(errs, fmt.Errorf("%w: CorrectInterval %v must be positive", ErrInvalidConfig, c.CorrectInterval))
	}
	r := c.resolved()
	errs = append(errs, r.CommitLog.Validate(), r.ConsumeQueue.Validate(), r.Index.Validate())
	return errors.Join(errs...)
}
