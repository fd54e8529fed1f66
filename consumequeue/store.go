package consumequeue

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/internal/vfs"
)

// Store holds the consumequeues of a broker.
type Store struct {
	dir string
	fs  vfs.FS
	per int64
	log hclog.Logger

	mu     sync.RWMutex
	queues map[QueueKey]*Queue
	closed bool
}

// topicPattern is RocketMQ's topic charset; it also keeps a topic from
// naming a path outside Dir.
var topicPattern = regexp.MustCompile(`^[%|a-zA-Z0-9_-]{1,127}$`)

// Open opens the store in cfg.Dir, creating it if needed, and recovers
// every queue found there.
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{
		dir:    cfg.Dir,
		fs:     cfg.FS,
		per:    int64(cfg.EntriesPerFile),
		log:    cfg.Logger.Named("consumequeue"),
		queues: map[QueueKey]*Queue{},
	}
	if err := s.fs.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("consumequeue: mkdir %s: %w", s.dir, err)
	}
	if err := s.loadAll(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) loadAll() error {
	topics, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("consumequeue: read dir %s: %w", s.dir, err)
	}
	for _, topic := range topics {
		if !topicPattern.MatchString(topic) {
			s.log.Warn("ignoring foreign entry", "name", topic)
			continue
		}
		ids, err := s.fs.ReadDir(filepath.Join(s.dir, topic))
		if err != nil {
			return fmt.Errorf("consumequeue: read dir %s: %w", topic, err)
		}
		for _, name := range ids {
			id, err := strconv.ParseInt(name, 10, 32)
			if err != nil || id < 0 || strconv.FormatInt(id, 10) != name {
				s.log.Warn("ignoring foreign entry", "topic", topic, "name", name)
				continue
			}
			q := s.newQueue(topic, int32(id))
			s.queues[QueueKey{topic, int32(id)}] = q
			if err := q.load(); err != nil {
				return err
			}
		}
	}
	s.log.Info("opened", "dir", s.dir, "queues", len(s.queues))
	return nil
}

func (s *Store) newQueue(topic string, id int32) *Queue {
	return &Queue{
		topic: topic,
		id:    id,
		dir:   filepath.Join(s.dir, topic, strconv.FormatInt(int64(id), 10)),
		fs:    s.fs,
		per:   s.per,
		log:   s.log,
	}
}

// Queue returns the queue of topic and queueID, creating an empty one
// (files appear with its first Append).
func (s *Store) Queue(topic string, queueID int32) (*Queue, error) {
	k := QueueKey{topic, queueID}
	s.mu.RLock()
	q, ok := s.queues[k]
	closed := s.closed
	s.mu.RUnlock()
	if ok {
		return q, nil
	}
	// Names are checked when a queue is created; existing ones passed.
	if !topicPattern.MatchString(topic) || strings.Contains(topic, "..") {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	if queueID < 0 {
		return nil, fmt.Errorf("%w: negative queue id %d", ErrInvalidTopic, queueID)
	}
	if closed {
		return nil, ErrClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[k]; ok {
		return q, nil
	}
	if s.closed {
		return nil, ErrClosed
	}
	q = s.newQueue(topic, queueID)
	s.queues[k] = q
	return q, nil
}

// Lookup returns the queue of topic and queueID if it exists.
func (s *Store) Lookup(topic string, queueID int32) (*Queue, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	q, ok := s.queues[QueueKey{topic, queueID}]
	return q, ok
}

// Queues returns the keys of every queue, sorted by topic and id.
func (s *Store) Queues() []QueueKey {
	s.mu.RLock()
	keys := make([]QueueKey, 0, len(s.queues))
	for k := range s.queues {
		keys = append(keys, k)
	}
	s.mu.RUnlock()
	slices.SortFunc(keys, func(a, b QueueKey) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.QueueID) - int(b.QueueID)
	})
	return keys
}

// snapshot returns the queues, so that per-queue work runs without the
// store lock.
func (s *Store) snapshot() []*Queue {
	s.mu.RLock()
	defer s.mu.RUnlock()
	qs := make([]*Queue, 0, len(s.queues))
	for _, q := range s.queues {
		qs = append(qs, q)
	}
	return qs
}

// DeleteTopic removes every queue of topic and its files.
func (s *Store) DeleteTopic(topic string) error {
	if !topicPattern.MatchString(topic) {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	s.mu.Lock()
	var errs []error
	for k, q := range s.queues {
		if k.Topic == topic {
			errs = append(errs, q.close())
			delete(s.queues, k)
		}
	}
	s.mu.Unlock()
	errs = append(errs, s.fs.RemoveAll(filepath.Join(s.dir, topic)), s.fs.SyncDir(s.dir))
	return errors.Join(errs...)
}

// Flush makes every appended entry durable. The broker calls it
// periodically; what a crash loses since the last Flush is rebuilt by
// raft's replay.
func (s *Store) Flush() error {
	var errs []error
	for _, q := range s.snapshot() {
		errs = append(errs, q.flush())
	}
	return errors.Join(errs...)
}

// TruncateCommitOffset drops, in every queue, the entries whose commit
// offset is >= co, matching a commitlog truncated at co. It is durable when
// it returns.
func (s *Store) TruncateCommitOffset(co int64) error {
	var errs []error
	for _, q := range s.snapshot() {
		errs = append(errs, q.truncateCommitOffset(co))
	}
	return errors.Join(errs...)
}

// CorrectMinOffset moves every queue's MinOffset past the entries whose
// commit offset is below minCommitOffset (the commitlog's first offset
// after retention) and deletes files entirely below it; each queue keeps
// at least its last file.
func (s *Store) CorrectMinOffset(minCommitOffset int64) error {
	var errs []error
	for _, q := range s.snapshot() {
		errs = append(errs, q.correctMinOffset(minCommitOffset))
	}
	return errors.Join(errs...)
}

// Reset drops every queue and its files, leaving an empty store.
func (s *Store) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	var errs []error
	topics := map[string]bool{}
	for k, q := range s.queues {
		errs = append(errs, q.close())
		topics[k.Topic] = true
	}
	s.queues = map[QueueKey]*Queue{}
	names, err := s.fs.ReadDir(s.dir)
	errs = append(errs, err)
	for _, n := range names {
		if topicPattern.MatchString(n) {
			errs = append(errs, s.fs.RemoveAll(filepath.Join(s.dir, n)))
		}
	}
	errs = append(errs, s.fs.SyncDir(s.dir))
	s.log.Info("reset", "queues", len(topics))
	return errors.Join(errs...)
}

// Close closes every file without flushing; call Flush first to keep the
// tail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, q := range s.queues {
		errs = append(errs, q.close())
	}
	return errors.Join(errs...)
}

// Rebuild resets s and re-appends every entry each yields, in commitlog
// order, then flushes. A queue's first entry may start anywhere (the
// commitlog's head may have been deleted); after that offsets must follow.
// dledger calls it with the messages decoded from the commitlog.
func Rebuild(s *Store, each func(yield func(topic string, queueID int32, queueOffset int64, e Entry) error) error) error {
	if err := s.Reset(); err != nil {
		return err
	}
	err := each(func(topic string, queueID int32, queueOffset int64, e Entry) error {
		q, err := s.Queue(topic, queueID)
		if err != nil {
			return err
		}
		if q.MinOffset() == q.MaxOffset() && q.MaxOffset() != queueOffset && q.LastCommitOffset() < 0 {
			if err := q.SetMinOffset(queueOffset); err != nil {
				return err
			}
		}
		return q.Append(queueOffset, e)
	})
	if err != nil {
		return fmt.Errorf("consumequeue: rebuild: %w", err)
	}
	return s.Flush()
}
