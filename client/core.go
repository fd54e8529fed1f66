package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// core is what every client kind is built on, one per Producer, Admin or
// consumer: one remoting.Client (one connection per address), the route
// cache, the client id, and the periodic route refresh and heartbeat.
//
// Hook points for client kinds (all safe to call before start):
//   - addHeartbeatSource: contribute producer or consumer data to every
//     HEART_BEAT;
//   - onRoute: be told of every route fetched (e.g. to rebalance);
//   - handle: serve a request brokers send (NOTIFY_CONSUMER_IDS_CHANGED,
//     CHECK_TRANSACTION_STATE).
type core struct {
	cfg      *config
	log      hclog.Logger
	remote   *remoting.Client
	routes   *routeCache
	clientID string
	ip       netip.Addr
	// autoCreate makes a topic unknown to the name servers take TBW102's
	// route (producers).
	autoCreate bool

	mu        sync.Mutex
	hbSources []func(*protocol.HeartbeatData)
	routeSubs []func(*Route)
	hbKnown   map[string]bool // addresses already sent a heartbeat
	started   bool
	closed    bool
	stop      chan struct{}
	wg        sync.WaitGroup
}

func newCore(cfg *config, name string) (*core, error) {
	rcfg := remoting.DefaultClientConfig()
	rcfg.DialTimeout = cfg.dialTimeout
	rcfg.TLS = cfg.tls
	rcfg.Logger = cfg.logger.Named("remoting")
	remote, err := remoting.NewClient(rcfg)
	if err != nil {
		return nil, err
	}
	ip := localIP()
	c := &core{cfg: cfg, log: cfg.logger.Named(name), remote: remote, ip: ip,
		clientID: ip.String() + "@" + cfg.resolvedInstance(), stop: make(chan struct{}), hbKnown: map[string]bool{}}
	c.routes = newRouteCache(c)
	return c, nil
}

// localIP is the first non-loopback IPv4 address of the host, else
// 127.0.0.1: the ip part of client ids and unique keys.
func localIP() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if pn, ok := a.(*net.IPNet); ok && !pn.IP.IsLoopback() {
				if ip, ok := netip.AddrFromSlice(pn.IP.To4()); ok && pn.IP.To4() != nil {
					return ip
				}
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// addHeartbeatSource registers f to fill in every heartbeat.
func (c *core) addHeartbeatSource(f func(*protocol.HeartbeatData)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hbSources = append(c.hbSources, f)
}

// onRoute registers f to run (on the fetching goroutine) after every
// successful route fetch.
func (c *core) onRoute(f func(*Route)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routeSubs = append(c.routeSubs, f)
}

// routeChanged runs the route hooks and heartbeats, at once, the nodes
// the route names that have not had one yet, so that brokers know a
// client before its first send or pull.
func (c *core) routeChanged(r *Route) {
	c.mu.Lock()
	subs := slices.Clone(c.routeSubs)
	var fresh []string
	for _, bd := range r.Data.BrokerDatas {
		for _, a := range brokerAddrs(bd) {
			if !c.hbKnown[a] {
				c.hbKnown[a] = true
				fresh = append(fresh, a)
			}
		}
	}
	if len(fresh) > 0 && c.started && !c.closed {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.requestTimeout)
			defer cancel()
			c.heartbeat(ctx, fresh)
		}()
	}
	c.mu.Unlock()
	for _, f := range subs {
		f(r)
	}
}

// handle serves a request code brokers send to this client.
func (c *core) handle(code int16, f func(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command) {
	c.remote.HandleFunc(code, f)
}

// start runs the route refresh and heartbeat loops until close.
func (c *core) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.started {
		return nil
	}
	c.started = true
	c.every(c.cfg.routeRefresh, func(ctx context.Context) { c.routes.refreshAll(ctx) })
	c.every(c.cfg.heartbeat, func(ctx context.Context) { c.heartbeatAll(ctx) })
	return nil
}

// every runs f every d until close, each run bounded by the request
// timeout.
func (c *core) every(d time.Duration, f func(context.Context)) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), c.cfg.requestTimeout)
				f(ctx)
				cancel()
			}
		}
	}()
}

// close stops the loops and closes every connection.
func (c *core) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.stop)
	c.mu.Unlock()
	c.wg.Wait()
	_ = c.remote.Close()
}

func (c *core) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// withTimeout bounds ctx by d: the earlier of ctx's deadline and d wins.
// When ctx's deadline is already the earlier it returns ctx itself (no
// allocation on the send path).
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return ctx, noCancel
	}
	return context.WithTimeout(ctx, d)
}

// withDeadline is withTimeout with an absolute deadline.
func withDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && !dl.After(d) {
		return ctx, noCancel
	}
	return context.WithDeadline(ctx, d)
}

func noCancel() {}

// invoke sends req to addr and waits for the answer, bounded by ctx and
// the request timeout. Transport failures come back
// wrapped with the address; answers, failed or not, as responses. Requests
// go with RocketMQ's binary header (cheaper to encode and decode than
// JSON); brokers and name servers answer in kind.
func (c *core) invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := withTimeout(ctx, c.cfg.requestTimeout)
	defer cancel()
	return c.invokeHeld(ctx, addr, req)
}

// invokeHeld is invoke for a call the broker may hold past the request
// timeout (a long-poll pull, held up to its suspend timeout): bounded by
// ctx alone. A node that goes silent meanwhile still fails it within about
// 2 s: the connection's liveness probe (remoting.ClientConfig.ProbeAfter)
// goes unanswered and the connection is closed.
func (c *core) invokeHeld(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	req.SerializeType = remoting.SerializeRocketMQ
	c.sign(req)
	resp, err := c.remote.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("client: %s at %s: %w", remoting.CodeName(req.Code), addr, err)
	}
	return resp, nil
}

// call is invoke with a non-SUCCESS answer turned into an *Error.
func (c *core) call(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	resp, err := c.invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	return resp, responseError(addr, req, resp)
}

// callJSON is call decoding the answer's JSON body into v.
func (c *core) callJSON(ctx context.Context, addr string, req *remoting.Command, v any) error {
	resp, err := c.call(ctx, addr, req)
	if err != nil {
		return err
	}
	return decodeJSON(addr, req, resp, v)
}

// decodeJSON decodes an answer's JSON body into v.
func decodeJSON(addr string, req, resp *remoting.Command, v any) error {
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return fmt.Errorf("client: %s at %s: decoding answer: %w", remoting.CodeName(req.Code), addr, err)
	}
	return nil
}

// invokeNameServer sends req to the name servers in turn, from the last one
// that answered, until one answers (with any code).
func (c *core) invokeNameServer(ctx context.Context, req *remoting.Command) (*remoting.Command, string, error) {
	ns := c.cfg.nameServers
	first := int(c.routes.nsNext.Load())
	var errs []error
	for i := range ns {
		idx := (first + i) % len(ns)
		resp, err := c.invoke(ctx, ns[idx], req)
		if err == nil {
			c.routes.nsNext.Store(uint32(idx))
			return resp, ns[idx], nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, "", fmt.Errorf("%w: %v", ErrNoNameServer, errs)
}

// heartbeatAll sends one heartbeat to every broker address known.
func (c *core) heartbeatAll(ctx context.Context) { c.heartbeat(ctx, c.routes.brokerAddrsAll()) }

// heartbeat sends one heartbeat to each of addrs, concurrently.
func (c *core) heartbeat(ctx context.Context, addrs []string) {
	body, err := c.heartbeatBody()
	if err != nil {
		c.log.Error("heartbeat encode", "error", err)
		return
	}
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := remoting.NewRequest(remoting.ReqHeartBeat, nil, body)
			if _, err := c.call(ctx, addr, req); err != nil {
				c.log.Debug("heartbeat failed", "addr", addr, "error", err)
			}
		}()
	}
	wg.Wait()
}

func (c *core) heartbeatBody() ([]byte, error) {
	hb := protocol.HeartbeatData{ClientID: c.clientID, ProducerDataSet: []protocol.ProducerData{}, ConsumerDataSet: []protocol.ConsumerData{}}
	c.mu.Lock()
	srcs := slices.Clone(c.hbSources)
	c.mu.Unlock()
	for _, f := range srcs {
		f(&hb)
	}
	return json.Marshal(hb)
}
