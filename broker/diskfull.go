package broker

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/dledger"
)

// A full disk (commitlog DiskFull: usage above the refuse ratio, less
// than MinFreeBytes free, or a write that met ENOSPC) makes a node refuse
// every proposal (replica.propose answers SERVICE_NOT_AVAILABLE with a
// "disk full" remark) and, as a follower, every entry the leader sends; it
// is not a failure: the log takes writes again once a check finds space.
// A proposal that meets ENOSPC in the leader's own StoreLogs (between two
// checks) fails with commitlog.ErrNoSpace and is answered the same way;
// raft then steps the leader down. A full leader would keep the whole group from writing although
// the followers may have space, so it hands leadership on.

// Disk hand-off timing: how often a leader looks at its disk, and how long
// it waits after a transfer before trying another (a group whose disks
// are all full must not spin through elections).
const (
	diskCheckEvery   = 250 * time.Millisecond
	diskHandoffPause = 5 * time.Second
)

// diskHandoff transfers leadership away from a leader whose disk is full.
type diskHandoff struct {
	node *dledger.Node
	full func() bool
	log  hclog.Logger
}

func (d *diskHandoff) run(ctx context.Context) error {
	t := time.NewTicker(diskCheckEvery)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if !d.full() || time.Since(last) < diskHandoffPause {
			continue
		}
		last = time.Now()
		d.log.Warn("disk full: this leader refuses writes; handing leadership to a follower")
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := d.node.TransferLeadership(tctx, "")
		cancel()
		if err != nil {
			d.log.Warn("disk full: leadership transfer failed", "error", err)
		}
	}
}
