package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/message"
)

// stored is one message as the final read found it.
type stored struct {
	key    string
	seq    int
	queue  int32
	offset int64
}

// readAll reads every queue of the topic from offset 0 to its max offset
// with a pull consumer of a fresh group.
func readAll(ctx context.Context, a *client.Admin, ns string, run int) ([]stored, error) {
	group := fmt.Sprintf("chaos-check-%d-%d", run, time.Now().UnixNano())
	prog, err := a.ConsumerGroupProgress(ctx, group, topic)
	if err != nil {
		return nil, fmt.Errorf("chaos: max offsets: %w", err)
	}
	end := map[int32]int64{}
	var qs []client.MessageQueue
	for _, p := range prog {
		end[p.Queue.QueueID] = p.BrokerOffset
		qs = append(qs, p.Queue)
	}
	pc, err := client.NewPullConsumer(group, client.WithNameServers(ns), client.WithConsumeFrom(client.ConsumeFromFirst()))
	if err != nil {
		return nil, err
	}
	if err := pc.Assign(qs...); err != nil {
		return nil, err
	}
	if err := pc.Start(ctx); err != nil {
		return nil, err
	}
	defer pc.Close(context.Background())
	next := map[int32]int64{}
	var out []stored
	for !reachedEnd(next, end) {
		msgs, err := pc.Poll(ctx)
		if err != nil {
			return out, fmt.Errorf("chaos: final read stopped at %v of %v: %w", next, end, err)
		}
		for _, m := range msgs {
			out = append(out, toStored(m))
			next[m.QueueID] = max(next[m.QueueID], m.QueueOffset+1)
		}
	}
	return out, nil
}

func reachedEnd(next, end map[int32]int64) bool {
	for q, e := range end {
		if next[q] < e {
			return false
		}
	}
	return true
}

func toStored(m *message.MessageExt) stored {
	seq, _ := strconv.Atoi(m.Property(propSeq))
	return stored{key: m.Property(propKey), seq: seq, queue: m.QueueID, offset: m.QueueOffset}
}

// verdict is what the checker found in the final read.
type verdict struct {
	lost, dup, order int
	firstLost        []string
	firstOrder       []string
}

// check compares the final read with the acknowledged ids: lost
// (acknowledged, not stored), duplicates (copies beyond the first) and
// order violations (an acknowledged message stored after an
// acknowledged message of its key with a higher sequence).
func check(acked map[string]bool, all []stored) verdict {
	sort.Slice(all, func(i, j int) bool {
		if all[i].queue != all[j].queue {
			return all[i].queue < all[j].queue
		}
		return all[i].offset < all[j].offset
	})
	var v verdict
	copies := map[string]int{}
	high := map[string]int{} // key → highest acknowledged sequence stored so far
	for _, m := range all {
		id := msgID(m.key, m.seq)
		if copies[id]++; copies[id] > 1 {
			v.dup++
			continue
		}
		if !acked[id] {
			continue
		}
		if m.seq < high[m.key] {
			v.order++
			if len(v.firstOrder) < 5 {
				v.firstOrder = append(v.firstOrder, fmt.Sprintf("%s after %s/%d (queue %d offset %d)", id, m.key, high[m.key], m.queue, m.offset))
			}
		}
		high[m.key] = max(high[m.key], m.seq)
	}
	for id := range acked {
		if copies[id] == 0 {
			v.lost++
			if len(v.firstLost) < 5 {
				v.firstLost = append(v.firstLost, id)
			}
		}
	}
	return v
}

// longestGap is the longest time in [from, to] without an acknowledgement
// of our SDK's sends (acks sorted), counting from the window's edges.
func longestGap(acks []time.Time, from, to time.Time) time.Duration {
	i := sort.Search(len(acks), func(i int) bool { return !acks[i].Before(from) })
	prev, gap := from, time.Duration(0)
	for ; i < len(acks) && !acks[i].After(to); i++ {
		gap = max(gap, acks[i].Sub(prev))
		prev = acks[i]
	}
	return max(gap, to.Sub(prev))
}
