package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/client"
)

// ErrNoAdmin is New's answer to a Config without an Admin.
var ErrNoAdmin = errors.New("dashboard: Config.Admin is nil")

// Config is what a Server uses.
type Config struct {
	// Admin is the dashboard's access to the cluster (required). The
	// Server does not close it.
	Admin *client.Admin
	// Producer, started, sends the topic page's test messages; nil turns
	// the send form off. The Server does not close it.
	Producer *client.Producer
	// Timeout bounds the cluster calls of one page or form (default 15 s).
	Timeout time.Duration
	// Logger logs recovered panics and failed writes (default: none).
	Logger hclog.Logger
}

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 15 * time.Second

// Server is the dashboard, an http.Handler.
type Server struct {
	admin    *client.Admin
	producer *client.Producer
	timeout  time.Duration
	log      hclog.Logger
	pages    *pages
	mux      *http.ServeMux
}

var _ http.Handler = (*Server)(nil)

// New returns the dashboard of cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Admin == nil {
		return nil, ErrNoAdmin
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	s := &Server{admin: cfg.Admin, producer: cfg.Producer, timeout: cfg.Timeout, log: cfg.Logger, pages: p}
	s.mux = s.routes()
	return s, nil
}

func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.clusterPage)
	m.HandleFunc("POST /cluster/transfer", s.transferLeader)
	m.HandleFunc("GET /topics", s.topicsPage)
	m.HandleFunc("GET /topics/{topic}", s.topicPage)
	m.HandleFunc("POST /topics/{topic}/send", s.sendMessage)
	m.HandleFunc("GET /groups", s.groupsPage)
	m.HandleFunc("GET /groups/{group}", s.groupPage)
	m.HandleFunc("POST /groups/{group}/reset", s.resetOffsets)
	m.HandleFunc("GET /messages", s.messagesPage)
	m.Handle("GET /static/", http.FileServerFS(staticFS))
	return m
}

// ServeHTTP serves the pages; a panicking handler is answered with an
// error page, not a dropped connection.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("dashboard: handler panicked", "path", r.URL.Path, "panic", v)
			s.fail(w, r, http.StatusInternalServerError, "Internal error", fmt.Errorf("dashboard: %s failed (see the log)", r.URL.Path))
		}
	}()
	if r.Method == http.MethodPost && !sameOrigin(r) {
		s.fail(w, r, http.StatusForbidden, "Forbidden", errors.New("dashboard: a form of another site posted here"))
		return
	}
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'")
	s.mux.ServeHTTP(w, r)
}

// sameOrigin reports whether a POST came from the dashboard's own pages:
// browsers send Origin with a form's POST, so one naming another host is
// a cross-site request (tools that send none are let through).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	return o == "http://"+r.Host || o == "https://"+r.Host
}

// ctx bounds the cluster calls of one request.
func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.timeout)
}

// Serve serves h on ln until ctx ends, then shuts down gracefully
// (waiting up to 5 s for requests in flight). It returns nil after a
// shutdown by ctx.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-done
	return err
}
