package broker

import "time"

// minOffsetCorrectInterval is how often consumequeue starts follow the
// commitlog's retention (RocketMQ's cleanResourceInterval).
const minOffsetCorrectInterval = 10 * time.Second

// startReadRetention keeps every queue's min offset at the first message
// the commitlog still holds, so pulls below it get PULL_OFFSET_MOVED to
// the new start instead of reading entries whose bytes are gone.
func (b *Broker) startReadRetention() {
	b.every(minOffsetCorrectInterval, func() {
		if err := b.CorrectMinOffsets(); err != nil {
			b.log.Error("correcting consumequeue min offsets", "error", err)
		}
	})
}

// CorrectMinOffsets moves the consumequeues' min offsets past the messages
// commitlog retention removed, now (it also runs every 10 s).
func (b *Broker) CorrectMinOffsets() error {
	co, err := b.clog.MinCommitOffset()
	if err != nil {
		return err
	}
	return b.cq.CorrectMinOffset(co)
}
