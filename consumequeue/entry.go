package consumequeue

import (
	"encoding/binary"
	"sync"
)

// Entry is one consumequeue entry: where a message is in the commitlog and
// the hash of its tag for server-side filtering.
type Entry struct {
	// CommitOffset is the message's logical commit offset.
	CommitOffset int64
	// Size is the size of the message record in bytes.
	Size int32
	// TagsCode is the hash of the message's tag (RocketMQ's tagsCode).
	TagsCode int64
}

// QueueKey names a queue.
type QueueKey struct {
	Topic   string // the topic, also the directory name
	QueueID int32  // the queue id, also the subdirectory name
}

func (e Entry) encode(b []byte) {
	binary.BigEndian.PutUint64(b[0:8], uint64(e.CommitOffset))
	binary.BigEndian.PutUint32(b[8:12], uint32(e.Size))
	binary.BigEndian.PutUint64(b[12:20], uint64(e.TagsCode))
}

// appendTo appends e's encoding to b.
func (e Entry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.CommitOffset))
	b = binary.BigEndian.AppendUint32(b, uint32(e.Size))
	return binary.BigEndian.AppendUint64(b, uint64(e.TagsCode))
}

func decode(b []byte) Entry {
	return Entry{
		CommitOffset: int64(binary.BigEndian.Uint64(b[0:8])),
		Size:         int32(binary.BigEndian.Uint32(b[8:12])),
		TagsCode:     int64(binary.BigEndian.Uint64(b[12:20])),
	}
}

// valid reports whether e can be a written entry; unwritten space reads as
// zeros, whose size is 0.
func (e Entry) valid() bool { return e.Size > 0 && e.CommitOffset >= 0 }

// chunkEntries bounds one ReadAt of a batch read; the buffers are pooled so
// reads do not allocate.
const chunkEntries = 256

var chunkPool = sync.Pool{New: func() any { return new([chunkEntries * EntrySize]byte) }}
