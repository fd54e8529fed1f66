package dledger

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidConfig wraps every problem Config.Validate finds.
	ErrInvalidConfig = errors.New("dledger: invalid config")
	// ErrInvalidCommand means a command could not be encoded or decoded.
	ErrInvalidCommand = errors.New("dledger: invalid command")
	// ErrUnknownCommand means an entry carries a command type or version
	// this binary does not know. Applying it is impossible without
	// diverging from newer replicas, so the node stops.
	ErrUnknownCommand = errors.New("dledger: unknown command type or version")
	// ErrDivergence means the applied log disagrees with this node's state
	// (a leader-assigned offset or a consumequeue entry does not match).
	// The node stops: continuing would serve data other replicas do not have.
	ErrDivergence = errors.New("dledger: replica divergence")
	// ErrStaleProposal means the entry was proposed with offset counters of
	// an earlier leadership term and every replica rejected it without
	// applying it. Nothing was stored; retrying is safe.
	ErrStaleProposal = errors.New("dledger: stale proposal rejected")
	// ErrLeadershipLost means the leader lost leadership while the proposal
	// was in flight. The entry may or may not commit; the caller must treat
	// the outcome as unknown.
	ErrLeadershipLost = errors.New("dledger: leadership lost, outcome unknown")
	// ErrClosed is returned after Close or after the node stopped itself.
	// For a proposal that was already in flight the outcome is unknown.
	ErrClosed = errors.New("dledger: node closed")
	// ErrTooLarge means a single command exceeds Config.MaxBatchBytes.
	ErrTooLarge = errors.New("dledger: command too large")
	// ErrUnknownServer means a membership call named a server that is not
	// in the configuration.
	ErrUnknownServer = errors.New("dledger: unknown server")
	// ErrCatchingUp means AddVoter added a node as a non-voter and the node
	// had not yet caught up with the leader's log; it does not count
	// towards the quorum, and AddVoter again promotes it once it has.
	ErrCatchingUp = errors.New("dledger: new member still catching up")
)

// NotLeaderError is returned by writes on a node that is not the leader.
// LeaderAddr and LeaderID are empty while no leader is known. The proposal
// was not appended to the log, so resending it to the leader is safe.
type NotLeaderError struct {
	LeaderAddr string
	LeaderID   string
}

// Error implements error.
func (e *NotLeaderError) Error() string {
	if e.LeaderAddr == "" {
		return "dledger: not the leader, no leader known"
	}
	return fmt.Sprintf("dledger: not the leader, leader is %s at %s", e.LeaderID, e.LeaderAddr)
}
