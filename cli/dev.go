package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/broker"
	"github.com/raftmq/raftmq/commitlog"
	"github.com/raftmq/raftmq/namesrv"
	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// devNodes is the size of the dev group.
const devNodes = 3

func devCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "dev",
		Usage: "run a name server and a 3-node broker group in one process, on loopback",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "data", Value: "./data", Usage: "data directory (one subdirectory per node)"},
			&ucli.StringFlag{Name: "host", Value: "127.0.0.1", Usage: "loopback address to listen and advertise on"},
			&ucli.IntFlag{Name: "namesrv-port", Value: 9876, Usage: "name server port"},
			&ucli.IntFlag{Name: "broker-port", Value: 10911, Usage: "first broker's client port; nodes use it +0, +10, +20"},
			&ucli.IntFlag{Name: "raft-port", Value: 40911, Usage: "first broker's raft port; nodes use it +0, +10, +20"},
			&ucli.IntFlag{Name: "http-port", Value: 10980, Usage: "first broker's /healthz and /metrics port; nodes use it +0, +10, +20; 0 = off"},
			&ucli.StringFlag{Name: "flush", Value: "SYNC_FLUSH", Usage: "SYNC_FLUSH or ASYNC_FLUSH"},
			&ucli.StringFlag{Name: "log-level", Value: "warn", Usage: "trace, debug, info, warn or error"},
			&ucli.IntFlag{Name: "groups", Value: 1, Usage: "broker groups (3 nodes each) under the name server: broker-a, broker-b, …; group g's ports are the flags' +100·g"},
			&ucli.StringFlag{Name: "acl", Usage: "seed every group's ACL from this plain_acl.yml (clients then need credentials)"},
			&ucli.IntFlag{Name: "dashboard-port", Value: 8080, Usage: "web dashboard port (http://<host>:<port>/); 0 = off"},
			&ucli.BoolFlag{Name: "tls", Usage: "TLS on every port, raft included, with a throwaway CA and certificates generated in <data>/tls"},
		},
		Action: runDev,
	}
}

// devCluster is what `raftmq dev` runs.
type devCluster struct {
	ns       *namesrv.Server
	nsAddr   string
	httpAddr string // the first node's; the others follow at +10, +20
	brokers  []*broker.Broker
	errc     chan error
	tls      *devTLS       // nil without --tls
	dash     *webDashboard // nil with --dashboard-port 0 or dashErr
	dashErr  error
}

func runDev(c *ucli.Context) error {
	dc, err := startDev(c)
	if err != nil {
		return err
	}
	ctx, stop := signalContext(c.Context)
	defer stop()
	if err := dc.waitLeader(ctx, 15*time.Second); err != nil {
		dc.shutdown()
		return err
	}
	dc.startDashboard(c)
	printDevBanner(c.App.Writer, dc, c.String("data"))
	select {
	case err = <-dc.errc:
	case <-ctx.Done():
	}
	fmt.Fprintln(c.App.Writer, "raftmq dev: shutting down")
	dc.shutdown()
	return err
}

func startDev(c *ucli.Context) (*devCluster, error) {
	host := c.String("host")
	mode, err := parseFlushMode(c.String("flush"))
	if err != nil {
		return nil, err
	}
	logger := newLogger(c, "raftmq")
	groups := c.Int("groups")
	if groups < 1 || groups > 26 {
		return nil, fmt.Errorf("--groups %d: between 1 and 26", groups)
	}
	seed, err := aclSeed(c)
	if err != nil {
		return nil, err
	}
	dc := &devCluster{nsAddr: net.JoinHostPort(host, strconv.Itoa(c.Int("namesrv-port"))), errc: make(chan error, groups*devNodes+1)}
	if c.Bool("tls") {
		if dc.tls, err = newDevTLS(c.String("data"), host, logger); err != nil {
			return nil, fmt.Errorf("dev --tls: %w", err)
		}
	}
	nsCfg := namesrv.DefaultConfig()
	nsCfg.Addr, nsCfg.Logger = dc.nsAddr, logger
	if dc.tls != nil {
		nsCfg.Remoting.TLS = dc.tls.server
	}
	if dc.ns, err = namesrv.New(nsCfg); err != nil {
		return nil, err
	}
	go func() { dc.errc <- ignoreClosed(dc.ns.ListenAndServe()) }()

	for g := range groups {
		if err := dc.startGroup(c, g, host, mode, seed, logger); err != nil {
			dc.shutdown()
			return nil, err
		}
	}
	return dc, nil
}

// devGroupName is group g's BrokerName: broker-a, broker-b, …
func devGroupName(g int) string { return "broker-" + string(rune('a'+g)) }

// startGroup starts the 3 nodes of group g; its ports are the flags'
// +100·g, and +10 from one node to the next.
func (dc *devCluster) startGroup(c *ucli.Context, g int, host string, mode commitlog.FlushMode, seed *protocol.ACLConfig, logger hclog.Logger) error {
	name := devGroupName(g)
	var peers []broker.Peer
	for i := 0; i < devNodes; i++ {
		id := "n" + strconv.Itoa(i+1)
		if g > 0 {
			id = name[len("broker-"):] + id
		}
		peers = append(peers, broker.Peer{
			ID:           id,
			RaftAddr:     net.JoinHostPort(host, strconv.Itoa(c.Int("raft-port")+100*g+10*i)),
			RemotingAddr: net.JoinHostPort(host, strconv.Itoa(c.Int("broker-port")+100*g+10*i)),
		})
	}
	for i, p := range peers {
		cfg := broker.DefaultConfig()
		cfg.Cluster, cfg.BrokerName, cfg.NodeID, cfg.Peers = "DevCluster", name, p.ID, peers
		cfg.ListenAddr, cfg.DataDir = p.RemotingAddr, filepath.Join(c.String("data"), p.ID)
		cfg.NameServers, cfg.AutoCreateTopic, cfg.Store.CommitLog.FlushMode = []string{dc.nsAddr}, true, mode
		cfg.ACL = seed
		if hp := c.Int("http-port"); hp > 0 {
			cfg.HTTPAddr = net.JoinHostPort(host, strconv.Itoa(hp+100*g+10*i))
			if dc.httpAddr == "" {
				dc.httpAddr = cfg.HTTPAddr
			}
		}
		cfg.Logger = logger.Named(p.ID)
		if dc.tls != nil {
			dc.tls.configure(&cfg)
		}
		b, err := broker.New(cfg)
		if err != nil {
			return fmt.Errorf("node %s of %s: %w", p.ID, name, err)
		}
		dc.brokers = append(dc.brokers, b)
		go func() { dc.errc <- ignoreClosed(b.ListenAndServe()) }()
	}
	return nil
}

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, remoting.ErrServerClosed) {
		return nil
	}
	return err
}

func (dc *devCluster) waitLeader(ctx context.Context, d time.Duration) error {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		leaders := 0
		for _, b := range dc.brokers {
			if b.Node().IsLeader() {
				leaders++
			}
		}
		if leaders == len(dc.brokers)/devNodes {
			return nil
		}
		select {
		case err := <-dc.errc:
			if err == nil {
				err = errors.New("a server stopped during start-up")
			}
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("raftmq dev: no raft leader after %v", d)
		case <-tick.C:
		}
	}
}

// startDashboard serves the web dashboard on --dashboard-port (0: none),
// over HTTPS with --tls. A port it cannot listen on is reported in the
// banner, not fatal: the cluster is what dev is for. Its clients use the
// environment's credentials (RAFTMQ_ACCESS_KEY, ...) when --acl is on.
func (dc *devCluster) startDashboard(c *ucli.Context) {
	port := c.Int("dashboard-port")
	if port == 0 {
		return
	}
	su := dashboardSetup{listen: net.JoinHostPort(c.String("host"), strconv.Itoa(port)), log: newLogger(c, "dashboard"),
		nameServers: dc.nsAddr}
	if dc.tls != nil {
		su.clientTLS, su.serverTLS = dc.tls.peer, dc.tls.server
	}
	dc.dash, dc.dashErr = startDashboard(c.Context, su)
}

func (dc *devCluster) shutdown() {
	if dc.dash != nil {
		dc.dash.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// All nodes at once: one at a time, the survivors would spend the
	// shutdown electing leaders among themselves.
	var wg sync.WaitGroup
	for _, b := range dc.brokers {
		wg.Add(1)
		go func() { defer wg.Done(); _ = b.Shutdown(ctx) }()
	}
	wg.Wait()
	if dc.ns != nil {
		_ = dc.ns.Shutdown(ctx)
	}
}

func printDevBanner(w io.Writer, dc *devCluster, data string) {
	if n := len(dc.brokers) / devNodes; n > 1 {
		fmt.Fprintf(w, "raftmq dev: name server and %d broker groups of %d nodes are up (data in %s)\n\n", n, devNodes, data)
	} else {
		fmt.Fprintf(w, "raftmq dev: name server and a %d-node broker group are up (data in %s)\n\n", devNodes, data)
	}
	fmt.Fprintf(w, "  name server   %s\n", dc.nsAddr)
	for _, b := range dc.brokers {
		role := "follower"
		if b.Node().IsLeader() {
			role = "leader"
		}
		fmt.Fprintf(w, "  %s %s   %s  (raft %s, %s)\n", b.Config().BrokerName, b.Node().ID(), b.AdvertisedAddr(), b.Node().Addr(), role)
	}
	fmt.Fprintln(w)
	switch {
	case dc.dash != nil:
		fmt.Fprintf(w, "Dashboard:        %s\n\n", dc.dash.url())
	case dc.dashErr != nil:
		fmt.Fprintf(w, "Dashboard:        off: %v (--dashboard-port picks another port)\n\n", dc.dashErr)
	}
	if dc.tls != nil {
		dc.tls.printBanner(w, dc.nsAddr, dc.httpAddr)
		fmt.Fprintf(w, "Stop with Ctrl-C; data stays in %s.\n", data)
		return
	}
	fmt.Fprintf(w, "Connect any RocketMQ 4.x client with name server %s (NAMESRV_ADDR=%s).\n", dc.nsAddr, dc.nsAddr)
	fmt.Fprintf(w, "Send and consume:\n")
	fmt.Fprintf(w, "  raftmq send    --namesrv %s --topic TopicTest --body hello --count 3\n", dc.nsAddr)
	fmt.Fprintf(w, "  raftmq consume --namesrv %s --topic TopicTest --group demo --from first --count 3\n", dc.nsAddr)
	fmt.Fprintf(w, "The same with the unmodified Apache RocketMQ Go client:\n")
	fmt.Fprintf(w, "  (cd integration && go run ./examples/quickstart -namesrv %s)\n", dc.nsAddr)
	fmt.Fprintf(w, "Cluster status:   raftmq cluster status --namesrv %s\n", dc.nsAddr)
	if dc.httpAddr != "" {
		fmt.Fprintf(w, "Health, metrics:  http://%s/healthz  http://%s/metrics  (nodes +10, +20)\n", dc.httpAddr, dc.httpAddr)
	}
	fmt.Fprintf(w, "Stop with Ctrl-C; data stays in %s.\n", data)
}
