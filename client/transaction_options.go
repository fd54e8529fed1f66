package client

import "fmt"

// txConfig is a TransactionProducer's configuration: a producer's and the
// check-back pool's.
type txConfig struct {
	producerConfig
	checkWorkers int
}

// txOpt is a TransactionProducerOpt that only transactional producers
// take.
type txOpt func(*txConfig)

func (o txOpt) applyTransaction(c *txConfig) { o(c) }

// Defaults of the transactional producer, as named in the doc comments.
const (
	DefaultCheckWorkers = 1
	// CheckQueueSize is how many check-backs may wait for a worker; one
	// arriving at a full queue is dropped (and logged): the broker checks
	// the transaction again later. As RocketMQ's checkRequestHoldMax.
	CheckQueueSize = 2000
)

// newTxConfig resolves the options of a transactional producer of group.
func newTxConfig(group string, opts []TransactionProducerOpt) (*txConfig, error) {
	pc, err := defaultProducerConfig(group)
	if err != nil {
		return nil, err
	}
	c := &txConfig{producerConfig: *pc, checkWorkers: DefaultCheckWorkers}
	for _, o := range opts {
		if o != nil {
			o.applyTransaction(c)
		}
	}
	if err := c.validateAll(); err != nil {
		return nil, err
	}
	if c.checkWorkers < 1 {
		return nil, fmt.Errorf("%w: check workers %d must be at least 1", ErrInvalidOption, c.checkWorkers)
	}
	return c, nil
}

// WithCheckWorkers sets how many goroutines run the TransactionChecker on
// the brokers' check-backs (CHECK_TRANSACTION_STATE), which wait for them
// in a queue of CheckQueueSize. With more than one the checker runs
// concurrently with itself. A checker that asks a database takes a few
// milliseconds a call, and a broker checks every half message left
// undecided, so a producer with many in doubt may want more. Default 1,
// as the official clients: checks run one at a time.
func WithCheckWorkers(n int) TransactionProducerOpt {
	return txOpt(func(c *txConfig) { c.checkWorkers = n })
}
