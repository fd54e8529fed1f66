package consumequeue

import "fmt"

// Truncate drops the entries from queue offset off on (MinOffset <= off <
// MaxOffset) and makes that durable: the store cuts a queue it found
// damaged (a torn page, a flipped bit) and rebuilds it from the commitlog
// from there.
func (q *Queue) Truncate(off int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	if off < q.min || off >= q.max {
		return fmt.Errorf("%w: %s/%d truncate at %d, holds [%d,%d)", ErrOffsetOutOfRange, q.topic, q.id, off, q.min, q.max)
	}
	return q.truncateAt(off)
}
