package client

import (
	"crypto/md5"
	"encoding/binary"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// AllocateStrategy picks the queues one consumer of a clustering group
// takes: self's share of queues (sorted by topic, broker, id) among
// consumers (sorted client ids, self included). Every consumer of a group
// must use the same strategy, so that the shares partition the queues.
type AllocateStrategy func(group, self string, queues []MessageQueue, consumers []string) []MessageQueue

// AllocateAveragely gives each consumer a contiguous run of queues, the
// first len(queues)%len(consumers) consumers one more (RocketMQ's
// AllocateMessageQueueAveragely, the default).
func AllocateAveragely(_, self string, queues []MessageQueue, consumers []string) []MessageQueue {
	idx := slices.Index(consumers, self)
	if idx < 0 || len(queues) == 0 {
		return nil
	}
	n, c := len(queues), len(consumers)
	mod := n % c
	size := n / c
	if n <= c {
		size = 1
	} else if mod > 0 && idx < mod {
		size++
	}
	start := idx*size + mod
	if mod > 0 && idx < mod {
		start = idx * size
	}
	var out []MessageQueue
	for i := 0; i < min(size, n-start); i++ {
		out = append(out, queues[(start+i)%n])
	}
	return out
}

// AllocateAveragelyByCircle deals the queues out one at a time, consumer
// by consumer (RocketMQ's AllocateMessageQueueAveragelyByCircle).
func AllocateAveragelyByCircle(_, self string, queues []MessageQueue, consumers []string) []MessageQueue {
	idx := slices.Index(consumers, self)
	if idx < 0 {
		return nil
	}
	var out []MessageQueue
	for i := idx; i < len(queues); i += len(consumers) {
		out = append(out, queues[i])
	}
	return out
}

// AllocateConsistentHash places consumers on a hash ring with virtualNodes
// points each (10 if not positive) and gives each queue to the first
// consumer at or after the queue's hash (RocketMQ's
// AllocateMessageQueueConsistentHash, MD5): a consumer joining or leaving
// moves only the queues next to its points.
func AllocateConsistentHash(virtualNodes int) AllocateStrategy {
	if virtualNodes <= 0 {
		virtualNodes = 10
	}
	return func(_, self string, queues []MessageQueue, consumers []string) []MessageQueue {
		if !slices.Contains(consumers, self) {
			return nil
		}
		type point struct {
			h  uint64
			id string
		}
		var ring []point
		for _, c := range consumers {
			for i := 0; i < virtualNodes; i++ {
				ring = append(ring, point{ringHash(c + "-" + strconv.Itoa(i)), c})
			}
		}
		sort.Slice(ring, func(i, j int) bool { return ring[i].h < ring[j].h })
		var out []MessageQueue
		for _, q := range queues {
			h := ringHash(q.String())
			i := sort.Search(len(ring), func(i int) bool { return ring[i].h >= h }) % len(ring)
			if ring[i].id == self {
				out = append(out, q)
			}
		}
		return out
	}
}

func ringHash(s string) uint64 {
	sum := md5.Sum([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

// AllocateMachineRoom consumes only queues of broker groups in the given
// machine rooms, a broker name being "room@name", and splits them
// averagely (RocketMQ's AllocateMessageQueueByMachineRoom).
func AllocateMachineRoom(rooms ...string) AllocateStrategy {
	return func(_, self string, queues []MessageQueue, consumers []string) []MessageQueue {
		idx := slices.Index(consumers, self)
		if idx < 0 {
			return nil
		}
		var mine []MessageQueue
		for _, q := range queues {
			if room, _, ok := strings.Cut(q.BrokerName, "@"); ok && slices.Contains(rooms, room) {
				mine = append(mine, q)
			}
		}
		c := len(consumers)
		mod, rem := len(mine)/c, len(mine)%c
		out := slices.Clone(mine[mod*idx : mod*idx+mod])
		if rem > idx {
			out = append(out, mine[idx+mod*c])
		}
		return out
	}
}
