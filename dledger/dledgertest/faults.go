package dledgertest

import "github.com/raftmq/raftmq/internal/vfs"

// Partition puts the listed nodes in a group of their own; the others
// stay together. In-memory transport only.
func (c *Cluster) Partition(nodes ...int) {
	c.t.Helper()
	if c.opts.TCP {
		c.t.Fatal("dledgertest: Partition needs the in-memory transport")
	}
	c.mu.Lock()
	g := 1
	for _, m := range c.members {
		if m.group >= g {
			g = m.group + 1
		}
	}
	for _, i := range nodes {
		c.members[i].group = g
	}
	c.mu.Unlock()
	c.relink()
}

// Heal reconnects every live node.
func (c *Cluster) Heal() {
	c.mu.Lock()
	for _, m := range c.members {
		m.group = 0
	}
	c.mu.Unlock()
	c.relink()
}

// Kill closes node i as a crash would, keeping its data for Restart.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	c.mu.Lock()
	n, d := c.members[i].node, c.members[i].dispatch
	c.members[i].node = nil
	c.mu.Unlock()
	if n == nil {
		return
	}
	c.relink()
	if h, ok := d.(interface{ Halt() }); ok {
		h.Halt() // a store waiting for disk space lets the FSM go
	}
	if err := n.Close(); err != nil {
		c.t.Logf("dledgertest: close %s: %v", c.members[i].ID, err)
	}
	c.closeLog(c.members[i])
}

// LosePower cuts the power of nodes, one after the other as a rack's
// would go: each node's disk keeps only what it had fsynced (its MemFS's
// LosePower: a sync either completed before the cut or fails), then the
// node is killed; Restart brings it back on what its disk kept. Needs
// Options.MemFS.
func (c *Cluster) LosePower(nodes ...int) {
	c.t.Helper()
	disks := make([]*vfs.MemFS, len(nodes))
	for k, i := range nodes {
		m := c.members[i]
		if m.FS == nil {
			c.t.Fatal("dledgertest: LosePower needs Options.MemFS")
		}
		if c.Node(i) != nil {
			disks[k] = m.FS.LosePower()
		}
	}
	for k, i := range nodes {
		if disks[k] == nil {
			continue // already down: its disk is as it was left
		}
		c.Kill(i)
		c.mu.Lock()
		c.members[i].FS = disks[k]
		c.mu.Unlock()
	}
}

// closeLog closes a member's commitlog after its node stopped.
func (c *Cluster) closeLog(m *Member) {
	c.mu.Lock()
	l, closer := m.Log, m.closeStore
	m.Log, m.closeStore, m.dispatch = nil, nil, nil
	c.mu.Unlock()
	if closer != nil {
		if err := closer(); err != nil {
			c.t.Logf("dledgertest: close store of %s: %v", m.ID, err)
		}
	}
	if l == nil {
		return
	}
	if err := l.Close(); err != nil {
		c.t.Logf("dledgertest: close log of %s: %v", m.ID, err)
	}
}

// Restart starts a killed node again on its data.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.Node(i) != nil {
		c.t.Fatalf("dledgertest: %s is running", c.members[i].ID)
	}
	c.start(i, false)
}
