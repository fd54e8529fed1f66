package store

// A full disk under the consumequeues.
//
// The consumequeues are derived from the commitlog, and the commitlog
// refuses writes well before its disk is full (Retention.MinFreeBytes), so
// they normally have room. A disk filled by something else can still make
// a consumequeue write fail with ENOSPC or EDQUOT. That is no divergence:
// the entry is committed and the same bytes will fit once space returns.
// So Dispatch waits for space — this node applies nothing meanwhile, it
// keeps replicating what its log takes — and goes on by itself when the
// write succeeds, instead of stopping the node (whose restart would meet
// the same full disk). Halt ends the wait when the node is being stopped.

import (
	"errors"
	"syscall"
	"time"
)

const (
	// spaceRetryFirst and spaceRetryMax pace the retries of a write that
	// met a full disk.
	spaceRetryFirst = 50 * time.Millisecond
	spaceRetryMax   = time.Second
)

// errHalted is a write abandoned while it waited for space because the
// node is stopping.
var errHalted = errors.New("store: stopped while waiting for disk space")

// isNoSpace reports an error of a full disk or an exhausted quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// Halt ends every wait for disk space (Dispatch returns an error): call
// it before closing the raft node, whose Close waits for the FSM.
func (s *Store) Halt() { s.haltOnce.Do(func() { close(s.halt) }) }

// whenSpace runs write until it does not fail for lack of space, waiting
// between attempts, or until Halt or Close.
func (s *Store) whenSpace(what func() string, write func() error) error {
	wait := spaceRetryFirst
	for waited := false; ; waited = true {
		err := write()
		if !isNoSpace(err) {
			if waited && err == nil {
				s.log.Info("disk space is back: applying again", "write", what())
			}
			return err
		}
		if !waited {
			s.log.Warn("disk full: a consumequeue write waits for space; this node applies nothing meanwhile", "write", what(), "error", err)
		}
		select {
		case <-s.halt:
			return errors.Join(errHalted, err)
		case <-s.stop:
			return errors.Join(errHalted, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, spaceRetryMax)
	}
}
