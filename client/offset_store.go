package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// offsetStore keeps a group's consumed offsets: on the brokers
// (clustering) or in a local file (broadcasting). An offset is the next
// offset to consume.
type offsetStore interface {
	// read returns the stored offset of mq; ok is false when none is.
	read(ctx context.Context, mq MessageQueue) (off int64, ok bool, err error)
	// persist stores offs; it skips offsets unchanged since the last
	// successful persist.
	persist(ctx context.Context, offs map[MessageQueue]int64) error
}

// remoteOffsetStore keeps offsets on the leader of each queue's broker
// group (QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET).
type remoteOffsetStore struct {
	gm *groupMember

	mu   sync.Mutex
	last map[MessageQueue]int64
}

func newRemoteOffsetStore(gm *groupMember) *remoteOffsetStore {
	return &remoteOffsetStore{gm: gm, last: map[MessageQueue]int64{}}
}

func (s *remoteOffsetStore) header(mq MessageQueue) protocol.ConsumerOffsetHeader {
	return protocol.ConsumerOffsetHeader{ConsumerGroup: s.gm.cfg.group, Topic: mq.Topic, QueueID: mq.QueueID}
}

func (s *remoteOffsetStore) read(ctx context.Context, mq MessageQueue) (int64, bool, error) {
	req := remoting.NewRequest(remoting.ReqQueryConsumerOffset, s.header(mq).Ext(false), nil)
	resp, err := s.gm.callLeader(ctx, mq, req)
	var e *Error
	if errors.As(err, &e) && e.Code == remoting.ResQueryNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	off, err := strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("client: QUERY_CONSUMER_OFFSET of %s: bad offset %q", mq, resp.ExtFields["offset"])
	}
	s.mu.Lock()
	s.last[mq] = off
	s.mu.Unlock()
	return off, true, nil
}

func (s *remoteOffsetStore) persist(ctx context.Context, offs map[MessageQueue]int64) error {
	var errs []error
	for mq, off := range offs {
		s.mu.Lock()
		prev, seen := s.last[mq]
		s.mu.Unlock()
		if seen && prev == off {
			continue
		}
		h := s.header(mq)
		h.CommitOffset = off
		if _, err := s.gm.callLeader(ctx, mq, remoting.NewRequest(remoting.ReqUpdateConsumerOffset, h.Ext(true), nil)); err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		s.last[mq] = off
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// localOffsetStore keeps offsets in <dir>/<group>/offsets.json, written to
// a temporary file, synced and renamed, so a crash leaves the old or the
// new file.
type localOffsetStore struct {
	path string

	mu      sync.Mutex
	loaded  bool
	offsets map[MessageQueue]int64
}

// offsetFile is the file's JSON form.
type offsetFile struct {
	Offsets []offsetEntry `json:"offsetTable"`
}

type offsetEntry struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Offset     int64  `json:"offset"`
}

func newLocalOffsetStore(dir, group string) *localOffsetStore {
	return &localOffsetStore{path: filepath.Join(dir, group, "offsets.json"), offsets: map[MessageQueue]int64{}}
}

func (s *localOffsetStore) load() error {
	if s.loaded {
		return nil
	}
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		s.loaded = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	var f offsetFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("client: offset file %s: %w", s.path, err)
	}
	for _, e := range f.Offsets {
		s.offsets[MessageQueue{e.Topic, e.BrokerName, e.QueueID}] = e.Offset
	}
	s.loaded = true
	return nil
}

func (s *localOffsetStore) read(_ context.Context, mq MessageQueue) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return 0, false, err
	}
	off, ok := s.offsets[mq]
	return off, ok, nil
}

func (s *localOffsetStore) persist(_ context.Context, offs map[MessageQueue]int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	changed := false
	for mq, off := range offs {
		if prev, ok := s.offsets[mq]; !ok || prev != off {
			s.offsets[mq], changed = off, true
		}
	}
	if !changed {
		return nil
	}
	return s.write()
}

func (s *localOffsetStore) write() error {
	var f offsetFile
	for mq, off := range s.offsets {
		f.Offsets = append(f.Offsets, offsetEntry{mq.Topic, mq.BrokerName, mq.QueueID, off})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("client: offset dir: %w", err)
	}
	tmp := s.path + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	_, err = fh.Write(b)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		return fmt.Errorf("client: offset file: %w", err)
	}
	return nil
}
