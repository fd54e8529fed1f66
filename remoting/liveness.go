package remoting

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Liveness of a client's connections.
//
// A call the server may hold for a long time (a long-poll pull, 20 s by
// default) cannot be bounded by a short timeout, yet a server that froze
// (a paused process, a partition that drops packets without a reset)
// leaves such a call waiting for its whole deadline: TCP itself notices
// nothing for minutes. So a Client with ClientConfig.ProbeAfter set
// watches each of its connections: when a call has waited ProbeAfter and
// nothing at all arrived on the connection for as long, it sends a
// RAFTMQ_PING, which every Conn answers from its read loop whatever its
// handlers are doing (a server that does not know the code answers
// REQUEST_CODE_NOT_SUPPORTED, which proves as much). If no frame arrives
// within ProbeAfter, the connection is closed and its calls fail with
// ErrConnClosed, so the caller moves on: a held pull of a frozen node fails
// about 2×ProbeAfter in, not at its deadline.
//
// A call that times out with nothing received on its connection since it
// was written, after waiting at least ProbeAfter/2, closes the connection
// too: the next call dials afresh. A connection whose packets a partition
// dropped sits in TCP's retransmission backoff (1.6 s, 3.2 s, …) after the
// partition heals; calls on it would keep timing out while a new
// connection gets through at once.

// probeTick divides ProbeAfter: how often a connection checks whether it
// must probe.
const probeTick = 4

// maxPongsInFlight bounds the answers to pings a connection writes at once;
// a peer that floods pings gets the rest dropped (one answer is enough).
const maxPongsInFlight = 4

// errPeerSilent is the cause recorded when a connection is closed because
// its peer stopped answering.
var errPeerSilent = errors.New("peer silent")

// monoEpoch anchors the connection's monotonic timestamps.
var monoEpoch = time.Now()

// mono returns monotonic nanoseconds since monoEpoch.
func mono() int64 { return int64(time.Since(monoEpoch)) }

// pendingCall is a call waiting for its answer.
type pendingCall struct {
	done  func(*Command, error)
	sent  int64 // mono() when registered
	probe bool  // a liveness probe: not itself a reason to probe
}

// noteReceived records that a frame arrived (read loop).
func (c *Conn) noteReceived() {
	if c.opts.probeAfter > 0 {
		c.lastRecv.Store(mono())
	}
}

// probeLoop runs on a client connection with probing on, until it closes.
func (c *Conn) probeLoop() {
	defer c.opts.group.Done()
	t := time.NewTicker(max(c.opts.probeAfter/probeTick, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		if !c.probing.Load() && c.callWaitsInSilence(mono()) {
			c.probe()
		}
	}
}

// callWaitsInSilence reports whether nothing arrived for ProbeAfter while
// a call (other than a probe) has waited at least as long.
func (c *Conn) callWaitsInSilence(now int64) bool {
	after := int64(c.opts.probeAfter)
	if now-c.lastRecv.Load() < after {
		return false
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	for _, pc := range c.pending {
		if !pc.probe && now-pc.sent >= after {
			return true
		}
	}
	return false
}

// probe sends a RAFTMQ_PING and closes the connection if nothing arrives
// within ProbeAfter (the answer itself, or any other frame).
func (c *Conn) probe() {
	c.probing.Store(true)
	sent := mono()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.probeAfter)
	req := NewRequest(ReqPing, nil, nil)
	c.call(ctx, req, true, func(_ *Command, err error) {
		cancel()
		c.probing.Store(false)
		if errors.Is(err, ErrTimeout) && c.lastRecv.Load() < sent {
			c.log.Warn("closing connection: no answer to a liveness probe", "waited", c.opts.probeAfter)
			c.closeWith(fmt.Errorf("%w: no answer to a liveness probe within %v", errPeerSilent, c.opts.probeAfter))
		}
	})
}

// timedOutInSilence closes the connection after a call's timeout when
// nothing arrived on it since the call was written and the call waited at
// least ProbeAfter/2 (see the top of this file).
func (c *Conn) timedOutInSilence(pc pendingCall, err error) {
	if c.opts.probeAfter <= 0 || pc.probe || !errors.Is(err, ErrTimeout) {
		return
	}
	now := mono()
	if now-pc.sent < int64(c.opts.probeAfter/2) || c.lastRecv.Load() >= pc.sent {
		return
	}
	waited := time.Duration(now - pc.sent).Round(time.Millisecond)
	c.log.Warn("closing connection: a call timed out and nothing arrived since it was sent", "waited", waited)
	c.closeWith(fmt.Errorf("%w: nothing arrived in the %v a call waited", errPeerSilent, waited))
}

// pong answers a ping from its own goroutine, so the read loop never
// waits on a write.
func (c *Conn) pong(req *Command) {
	if req.IsOneway() {
		return
	}
	if c.pongs.Add(1) > maxPongsInFlight {
		c.pongs.Add(-1)
		return
	}
	resp := NewResponse(req, ResSuccess, "")
	c.opts.group.Add(1)
	go func() {
		defer c.opts.group.Done()
		defer c.pongs.Add(-1)
		if err := c.write(resp); err != nil {
			c.log.Debug("write ping answer failed", "error", err)
		}
	}()
}
