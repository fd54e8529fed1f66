package broker

// HTTP: /healthz, /metrics and /debug/pprof/ on Config.HTTPAddr, for
// operators and load balancers. /healthz answers 200 while the node serves
// and its group has a leader (the body says the role and term), 503 when
// it has none, its raft node stopped or its commitlog failed. /metrics is the Prometheus text
// format of the node's series under RocketMQ 5's names (metrics.go), its
// raft and store gauges, and hashicorp/raft's own metrics (raft_*).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	imetrics "github.com/raftmq/raftmq/internal/metrics"
	"github.com/raftmq/raftmq/remoting"
)

// HTTPHandler serves /healthz, /metrics and /debug/pprof/.
func (b *Broker) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", b.healthz)
	mux.HandleFunc("/metrics", b.serveMetrics)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// HTTPAddr is the bound HTTP address once serving, nil when HTTP is off.
func (b *Broker) HTTPAddr() net.Addr {
	b.httpMu.Lock()
	defer b.httpMu.Unlock()
	return b.httpAddr
}

// startHTTP listens on Config.HTTPAddr and serves until Shutdown. A listen
// failure is logged, not fatal: the broker's job is its client port.
func (b *Broker) startHTTP() {
	if b.cfg.HTTPAddr == "" {
		return
	}
	ln, err := net.Listen("tcp", b.cfg.HTTPAddr)
	if err != nil {
		b.log.Error("HTTP listener", "addr", b.cfg.HTTPAddr, "error", err)
		return
	}
	if b.cfg.HTTPTLS != nil {
		ln = tls.NewListener(ln, b.cfg.HTTPTLS)
	}
	b.httpMu.Lock()
	b.httpAddr = ln.Addr()
	b.httpMu.Unlock()
	srv := &http.Server{Handler: b.HTTPHandler(), ReadHeaderTimeout: 5 * time.Second}
	b.bg.goRun(func(stop <-chan struct{}) {
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		select {
		case <-stop:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
			<-done
		case err := <-done:
			if !errors.Is(err, http.ErrServerClosed) {
				b.log.Error("HTTP server stopped", "error", err)
			}
		}
	})
}

func (b *Broker) healthz(w http.ResponseWriter, _ *http.Request) {
	if err := b.store.Log().Err(); err != nil {
		http.Error(w, fmt.Sprintf("unavailable: commitlog failed, restart the node: %v\n", err), http.StatusServiceUnavailable)
		return
	}
	r := b.node.Raft()
	state := r.State()
	_, leader := b.node.Leader()
	term := r.Stats()["term"]
	if state == raft.Shutdown || leader == "" {
		http.Error(w, fmt.Sprintf("unavailable: raft %s, no leader known (term %s)\n", state, term), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(w, "ok: %s %s, term %s, leader %s\n", b.self.ID, state, term, leader)
}

// metricGauges maps Prometheus gauge names to runtime-table keys.
var metricGauges = map[string]string{
	"raftmq_raft_term":               "raftTerm",
	"raftmq_raft_commit_index":       "raftCommitIndex",
	"raftmq_raft_applied_index":      "raftAppliedIndex",
	"raftmq_raft_last_log_index":     "raftLastLogIndex",
	"raftmq_commitlog_max_offset":    "commitLogMaxOffset",
	"raftmq_commitlog_min_offset":    "commitLogMinOffset",
	"raftmq_messages_put_total":      "msgPutTotalTodayNow",
	"raftmq_message_bytes_put_total": "msgPutBytesTotal",
}

func (b *Broker) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	t := b.runtime.table()
	labels := fmt.Sprintf(`{cluster=%q,broker=%q,node=%q}`, b.cfg.Cluster, b.cfg.BrokerName, b.self.ID)
	names := make([]string, 0, len(metricGauges))
	for n := range metricGauges {
		names = append(names, n)
	}
	sort.Strings(names)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, n := range names {
		v, err := strconv.ParseFloat(t[metricGauges[n]], 64)
		if err != nil {
			continue // not known on this node right now
		}
		fmt.Fprintf(w, "# TYPE %s gauge\n%s%s %g\n", n, n, labels, v)
	}
	leader := 0
	if t["raftState"] == raft.Leader.String() {
		leader = 1
	}
	fmt.Fprintf(w, "# TYPE raftmq_raft_is_leader gauge\nraftmq_raft_is_leader%s %d\n", labels, leader)
	writeLimitCounters(w, labels, b.rs.LimitStats())
	b.scrapeGauges(t)
	_ = b.nm.sink.WritePrometheus(w)
	_ = imetrics.Global().WritePrometheus(w)
}

// numDiff is a - b of two decimal strings.
func numDiff(a, b string) (float64, bool) {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return x - y, err1 == nil && err2 == nil
}

// writeLimitCounters writes what the client-facing listener's abuse limits
// refused (docs/OPERATIONS.md, "Connection limits").
func writeLimitCounters(w io.Writer, labels string, st remoting.LimitStats) {
	for _, c := range []struct {
		name string
		v    uint64
	}{
		{"raftmq_remoting_refused_connections_total", st.RefusedConns},
		{"raftmq_remoting_rate_limited_requests_total", st.RateLimited},
		{"raftmq_remoting_rate_limit_disconnects_total", st.RateDisconnects},
		{"raftmq_remoting_header_too_large_total", st.HeaderRefused},
		{"raftmq_remoting_idle_closed_total", st.IdleClosed},
	} {
		fmt.Fprintf(w, "# TYPE %s counter\n%s%s %d\n", c.name, c.name, labels, c.v)
	}
}
