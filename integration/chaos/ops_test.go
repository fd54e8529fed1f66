package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The fault primitives, each applied from outside the container.

// kill sends SIGKILL to the node's process (docker kill: Docker does not
// restart a container it killed itself; start brings it back).
func (c *cluster) kill(n *node) error {
	_, err := docker("kill", "-s", "KILL", n.name)
	return err
}

// start starts a stopped container again (no-op when it runs).
func (c *cluster) start(n *node) error {
	_, err := docker("start", n.name)
	return err
}

// pause freezes every process of the node (cgroup freezer: no signal,
// sockets stay open, peers see silence).
func (c *cluster) pause(n *node) error {
	_, err := docker("pause", n.name)
	return err
}

// unpause thaws a paused node; an error means it was not paused.
func (c *cluster) unpause(n *node) error {
	_, err := docker("unpause", n.name)
	return err
}

// disconnect takes the node off the network (every peer and the host).
func (c *cluster) disconnect(n *node) error {
	_, err := docker("network", "disconnect", "-f", c.net.name, n.name)
	return err
}

// connect puts the node back on the network at its address; an error
// saying it already is connected is not one.
func (c *cluster) connect(n *node) error {
	_, err := docker("network", "connect", "--ip", n.ip, c.net.name, n.name)
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

// pid is the host pid of the node's process (0 when it is not running).
func (c *cluster) pid(n *node) (string, error) {
	pid, err := docker("inspect", "-f", "{{.State.Pid}}", n.name)
	if err == nil && (pid == "" || pid == "0") {
		err = fmt.Errorf("chaos: %s is not running", n.name)
	}
	return pid, err
}

// iptables runs iptables in the node's network namespace.
func (c *cluster) iptables(n *node, args ...string) error {
	pid, err := c.pid(n)
	if err != nil {
		return err
	}
	_, err = run("nsenter", append([]string{"-t", pid, "-n", "iptables", "-w"}, args...)...)
	return err
}

// dropFrom makes the node drop every packet from the peers (one way: what
// it sends still arrives).
func (c *cluster) dropFrom(n *node, peers ...*node) error {
	for _, p := range peers {
		if err := c.iptables(n, "-A", "INPUT", "-s", p.ip, "-j", "DROP"); err != nil {
			return err
		}
	}
	return nil
}

// isolate drops everything between the node and its peers, both ways
// (the host still reaches it).
func (c *cluster) isolate(n *node, peers ...*node) error {
	for _, p := range peers {
		if err := c.iptables(n, "-A", "INPUT", "-s", p.ip, "-j", "DROP"); err != nil {
			return err
		}
		if err := c.iptables(n, "-A", "OUTPUT", "-d", p.ip, "-j", "DROP"); err != nil {
			return err
		}
	}
	return nil
}

// flush removes the node's iptables rules; a node that is not running has
// none (a restart gets a fresh namespace).
func (c *cluster) flush(n *node) error {
	if _, err := c.pid(n); err != nil {
		return nil
	}
	if err := c.iptables(n, "-F", "INPUT"); err != nil {
		return err
	}
	return c.iptables(n, "-F", "OUTPUT")
}

// heal undoes every fault on every node: unpause, reconnect, flush the
// rules, free the disk, start what is stopped. It reports the first
// error that is not "nothing to undo".
func (c *cluster) heal() error {
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, n := range c.nodes {
		_ = c.unpause(n) // fails when not paused
		note(c.connect(n))
		if n.disk != nil {
			note(n.disk.free())
		}
		note(c.start(n))
		note(c.flush(n))
		note(c.stepClock(n, 0))
	}
	return first
}

// clockFile is the name of a node's fault clock file in its /fault.
const clockFile = "clock"

// stepClock sets the node's wall clock to d from the real one: the broker
// reads its --fault-clock-file every 50 ms (containers share the kernel's
// clock, which cannot be stepped for one of them). The file is replaced
// whole, so the broker never reads a half-written one.
func (c *cluster) stepClock(n *node, d time.Duration) error {
	if n.faultDir == "" {
		return nil
	}
	tmp := filepath.Join(n.faultDir, clockFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(d.Milliseconds(), 10)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(n.faultDir, clockFile))
}
