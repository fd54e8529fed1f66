package dledger

import "github.com/hashicorp/raft"

// PutMessages returns the messages that entry l put, exactly as the FSM
// dispatches them when it applies l: none for an entry that is not a put,
// and none for a stale put (ErrStaleProposal, applied as a no-op). A
// message store uses it to rebuild what it derived from the log (its
// consumequeues and key index) after finding that derived data damaged.
func PutMessages(l *raft.Log) ([]AppliedMessage, error) {
	if l.Type != raft.LogCommand {
		return nil, nil
	}
	v, err := decodeEntry(l.Data)
	if err != nil {
		return nil, err
	}
	p, ok := v.(*putEntry)
	if !ok || p.Term != l.Term {
		return nil, nil
	}
	return p.Messages, nil
}
