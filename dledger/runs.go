package dledger

// queueRun is the consumequeue entries of one queue within one put entry:
// consecutive queue offsets from first.
type queueRun struct {
	key     QueueKey
	first   int64
	entries []QueueEntry
}

// queueRuns groups a put entry's messages by queue, in order of first
// appearance, reusing its memory from one entry to the next (it belongs
// to the FSM goroutine). The checked offsets of one queue within an entry
// are consecutive, so each group is one run.
type queueRuns struct {
	runs   []queueRun
	at     map[QueueKey]int
	counts []int
	buf    []QueueEntry
}

func (g *queueRuns) group(msgs []AppliedMessage) []queueRun {
	if g.at == nil {
		g.at = map[QueueKey]int{}
	}
	clear(g.at)
	g.runs, g.counts = g.runs[:0], g.counts[:0]
	for i := range msgs {
		k := QueueKey{msgs[i].Topic, msgs[i].QueueID}
		j, ok := g.at[k]
		if !ok {
			j = len(g.runs)
			g.at[k] = j
			g.runs = append(g.runs, queueRun{key: k, first: msgs[i].QueueOffset})
			g.counts = append(g.counts, 0)
		}
		g.counts[j]++
	}
	if cap(g.buf) < len(msgs) {
		g.buf = make([]QueueEntry, len(msgs))
	}
	buf := g.buf[:len(msgs)]
	for j := range g.runs {
		n := g.counts[j]
		g.runs[j].entries, buf = buf[:0:n], buf[n:]
	}
	for i := range msgs {
		m := &msgs[i]
		r := &g.runs[g.at[QueueKey{m.Topic, m.QueueID}]]
		r.entries = append(r.entries, QueueEntry{CommitOffset: m.CommitOffset, Size: m.Size, TagsCode: m.TagsCode})
	}
	if cap(g.buf) > maxRetainedRun {
		g.buf = nil
	}
	return g.runs
}

// maxRetainedRun bounds the entry buffer kept between applies.
const maxRetainedRun = 1 << 16
