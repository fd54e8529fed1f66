package dledger

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// A snapshot holds metadata only, so a node that installs one has none of
// the messages below it, although the others keep them until retention
// deletes them. Were it elected, what consumers had not read below the
// snapshot would be gone. So the snapshot a node sends carries the log's
// retained history after the metadata, and the node that installs it
// imports that history before it answers the install: from then on it
// holds every message the others do.
//
// Framed snapshot stream (frozen, version 1):
//
//	magic u32 "RMQH" | version u8 = 1 | metaLen u32 | metadata (the
//	snapshot encoding of doc.go) | first u64 | last u64 | historyLen u64 |
//	history: the commitlog's framed records of [first, last]
//
// Locally taken snapshots stay metadata only on disk: the history is
// appended, read lazily from the log, when the snapshot is opened. A
// received snapshot is stored as it came, framed.
const (
	historyMagic   = 0x524d5148 // "RMQH"
	historyVersion = 1
	historyHdrLen  = 4 + 1 + 4
	historyMidLen  = 8 + 8 + 8
)

// HistoryLog is a log store that streams and imports its retained history
// (commitlog.Log). With one, snapshots carry the history below them.
type HistoryLog interface {
	raft.LogStore
	// HistoryStream opens the records from the first index held through
	// index through: first, last, the stream's exact size, the stream.
	HistoryStream(through uint64) (first, last uint64, size int64, r io.ReadCloser, err error)
	// ImportHistory stores a stream's records in the empty log; visit sees
	// each entry stored. They are durable when it returns.
	ImportHistory(r io.Reader, first, last uint64, visit func(*raft.Log) error) error
	// HistoryPending reports an import not yet followed by HistoryDerived.
	HistoryPending() bool
	// HistoryDerived records that what is derived from the import is durable.
	HistoryDerived() error
}

// historySnapshots is a snapshot store whose snapshots carry the history.
type historySnapshots struct {
	raft.SnapshotStore
	log HistoryLog
}

// Open implements raft.SnapshotStore.
func (h *historySnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := h.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(rc, 64<<10)
	if head, err := br.Peek(4); err == nil && binary.BigEndian.Uint32(head) == historyMagic {
		return meta, readCloser{br, rc.Close}, nil // received: framed already
	}
	md, err := io.ReadAll(br)
	rc.Close()
	if err != nil {
		return nil, nil, err
	}
	first, last, size, hist, err := h.log.HistoryStream(meta.Index)
	if err != nil {
		return nil, nil, fmt.Errorf("dledger: open the history below snapshot %s: %w", id, err)
	}
	var b []byte
	b = binary.BigEndian.AppendUint32(b, historyMagic)
	b = append(b, historyVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(md)))
	b = append(b, md...)
	b = binary.BigEndian.AppendUint64(b, first)
	b = binary.BigEndian.AppendUint64(b, last)
	b = binary.BigEndian.AppendUint64(b, uint64(size))
	m := *meta
	m.Size = int64(len(b)) + size
	return &m, readCloser{io.MultiReader(bytes.NewReader(b), hist), hist.Close}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// framedSnapshot is a snapshot stream read up to its history.
type framedSnapshot struct {
	meta        []byte
	first, last uint64
	history     io.Reader // nil for a metadata-only stream
}

// readSnapshot reads a snapshot stream's metadata and, if it is framed,
// the history's header, leaving the history unread.
func readSnapshot(r io.Reader) (*framedSnapshot, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(historyHdrLen)
	if err != nil || binary.BigEndian.Uint32(head) != historyMagic {
		b, err := io.ReadAll(br)
		return &framedSnapshot{meta: b}, err
	}
	if head[4] != historyVersion {
		return nil, fmt.Errorf("%w: history frame version %d (this binary reads %d)", ErrCorruptSnapshot, head[4], historyVersion)
	}
	md := make([]byte, binary.BigEndian.Uint32(head[5:]))
	mid := make([]byte, historyMidLen)
	if _, err := br.Discard(historyHdrLen); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(br, md); err != nil {
		return nil, errors.Join(ErrCorruptSnapshot, err)
	}
	if _, err := io.ReadFull(br, mid); err != nil {
		return nil, errors.Join(ErrCorruptSnapshot, err)
	}
	f := &framedSnapshot{meta: md, first: binary.BigEndian.Uint64(mid), last: binary.BigEndian.Uint64(mid[8:])}
	f.history = io.LimitReader(br, int64(binary.BigEndian.Uint64(mid[16:])))
	return f, nil
}

// importHistory imports the snapshot's history when the log is empty (the
// node is installing it) and returns the first queue offset of every queue
// the log's history below the snapshot holds, for the dispatcher to
// restart reset queues at; nil when nothing was imported and no import is
// pending from before a crash.
func (f *fsm) importHistory(snap *framedSnapshot, applied uint64) (map[QueueKey]int64, error) {
	hl, ok := f.logs.(HistoryLog)
	if !ok {
		return nil, nil
	}
	from := map[QueueKey]int64{}
	note := func(l *raft.Log) error {
		msgs, err := putMessages(l)
		for i := range msgs {
			k := QueueKey{msgs[i].Topic, msgs[i].QueueID}
			if _, ok := from[k]; !ok {
				from[k] = msgs[i].QueueOffset
			}
		}
		return err
	}
	last, err := hl.LastIndex()
	if err != nil {
		return nil, err
	}
	switch {
	case last == 0 && snap.history != nil && snap.first != 0 && snap.last == applied:
		if err := hl.ImportHistory(snap.history, snap.first, snap.last, note); err != nil {
			return nil, fmt.Errorf("dledger: import the history [%d, %d] below snapshot %d: %w", snap.first, snap.last, applied, err)
		}
		return from, nil
	case hl.HistoryPending():
		first, err := hl.FirstIndex()
		if err != nil {
			return nil, err
		}
		return from, eachEntry(hl, first, min(last, applied), note)
	}
	return nil, nil
}

// deriveHistory dispatches the messages of the log's entries up to the
// snapshot, after Restored restarted the reset queues where they begin,
// and records the import as derived once the dispatcher is durable.
func (f *fsm) deriveHistory(applied uint64) error {
	hl := f.logs.(HistoryLog)
	first, err := hl.FirstIndex()
	if err != nil {
		return err
	}
	last, err := hl.LastIndex()
	if err != nil {
		return err
	}
	err = eachEntry(hl, first, min(last, applied), func(l *raft.Log) error {
		msgs, err := putMessages(l)
		if err != nil || len(msgs) == 0 {
			return err
		}
		return f.dispatch.Dispatch(l.Index, msgs)
	})
	if err != nil {
		return fmt.Errorf("dledger: dispatching the history below snapshot %d: %w", applied, err)
	}
	if err := f.syncSinks(); err != nil {
		return err
	}
	return hl.HistoryDerived()
}

// eachEntry calls fn for every entry in [lo, hi]; lo == 0 is none.
func eachEntry(logs raft.LogStore, lo, hi uint64, fn func(*raft.Log) error) error {
	for i := lo; lo != 0 && i <= hi; i++ {
		var l raft.Log
		if err := logs.GetLog(i, &l); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
	return nil
}

// putMessages returns the messages an entry stored: those of a put entry
// appended in the term of its counters (see fsm.applyPut).
func putMessages(l *raft.Log) ([]AppliedMessage, error) {
	if l.Type != raft.LogCommand {
		return nil, nil
	}
	v, err := decodeEntry(l.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: entry %d: %w", ErrDivergence, l.Index, err)
	}
	if p, ok := v.(*putEntry); ok && p.Term == l.Term {
		return p.Messages, nil
	}
	return nil, nil
}
