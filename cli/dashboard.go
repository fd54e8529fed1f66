package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	ucli "github.com/urfave/cli/v2"

	"github.com/raftmq/raftmq/client"
	"github.com/raftmq/raftmq/dashboard"
)

// dashboardProducerGroup is the producer group of the dashboard's test
// messages.
const dashboardProducerGroup = "RAFTMQ_DASHBOARD"

func dashboardCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "dashboard",
		Usage: "serve the web dashboard (cluster, topics, consumer groups, messages) of the cluster behind --namesrv",
		Flags: []ucli.Flag{namesrvFlag(),
			&ucli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Usage: "HTTP address to serve on (the dashboard has no authentication: keep it on loopback or behind a proxy)"},
			&ucli.StringFlag{Name: "log-level", Value: "warn", Usage: "trace, debug, info, warn or error"},
		},
		Action: runDashboard,
	}
}

func runDashboard(c *ucli.Context) error {
	cr, tc, err := clientSecurity(c)
	if err != nil {
		return err
	}
	d, err := startDashboard(c.Context, dashboardSetup{listen: c.String("listen"), log: newLogger(c, "dashboard"),
		nameServers: c.String("namesrv"), credentials: cr, clientTLS: tc})
	if err != nil {
		return err
	}
	defer d.close()
	fmt.Fprintf(c.App.Writer, "raftmq dashboard: %s (name server %s); stop with Ctrl-C\n", d.url(), c.String("namesrv"))
	ctx, stop := signalContext(c.Context)
	defer stop()
	select {
	case <-d.done:
		return d.err
	case <-ctx.Done():
		return nil
	}
}

// webDashboard is a running dashboard with the SDK clients it owns.
type webDashboard struct {
	admin    *client.Admin
	producer *client.Producer
	addr     net.Addr
	https    bool
	cancel   context.CancelFunc
	done     chan struct{} // closed when the server stopped, with err
	err      error
}

// dashboardSetup is what startDashboard needs.
type dashboardSetup struct {
	listen      string
	log         hclog.Logger
	nameServers string // comma-separated
	credentials client.Credentials
	clientTLS   *tls.Config // to the cluster; nil: plaintext
	serverTLS   *tls.Config // for the browser; nil: plain HTTP
}

// startDashboard serves the dashboard of the cluster behind
// su.nameServers on su.listen until close.
func startDashboard(ctx context.Context, su dashboardSetup) (*webDashboard, error) {
	opts := []client.Opt{client.WithNameServers(su.nameServers), client.WithRequestTimeout(5 * time.Second),
		client.WithCredentials(su.credentials), client.WithTLS(su.clientTLS), client.WithLogger(su.log)}
	d := &webDashboard{done: make(chan struct{}), https: su.serverTLS != nil}
	var err error
	if d.admin, err = client.NewAdmin(opts...); err != nil {
		return nil, err
	}
	if err = d.startProducer(ctx, opts); err != nil {
		d.admin.Close()
		return nil, err
	}
	srv, err := dashboard.New(dashboard.Config{Admin: d.admin, Producer: d.producer, Logger: su.log})
	if err == nil {
		err = d.listen(su.listen, su.serverTLS, srv)
	}
	if err != nil {
		d.closeClients()
		return nil, err
	}
	return d, nil
}

func (d *webDashboard) startProducer(ctx context.Context, opts []client.Opt) error {
	popts := make([]client.ProducerOpt, 0, len(opts))
	for _, o := range opts {
		popts = append(popts, o)
	}
	p, err := client.NewProducer(dashboardProducerGroup, popts...)
	if err != nil {
		return err
	}
	if err := p.Start(ctx); err != nil {
		return fmt.Errorf("dashboard producer: %w", err)
	}
	d.producer = p
	return nil
}

func (d *webDashboard) listen(addr string, tc *tls.Config, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	d.addr = ln.Addr()
	sctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		err := dashboard.Serve(sctx, ln, h)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		d.err = err
		close(d.done)
	}()
	return nil
}

// url is the dashboard's address for a browser.
func (d *webDashboard) url() string {
	if d.https {
		return "https://" + d.addr.String() + "/"
	}
	return "http://" + d.addr.String() + "/"
}

// close stops the server, then the clients.
func (d *webDashboard) close() {
	d.cancel()
	<-d.done
	d.closeClients()
}

func (d *webDashboard) closeClients() {
	if d.producer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.producer.Close(ctx)
	}
	d.admin.Close()
}
