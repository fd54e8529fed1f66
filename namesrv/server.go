package namesrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftmq/raftmq/protocol"
	"github.com/raftmq/raftmq/remoting"
)

// Config is a name server's configuration.
type Config struct {
	// Addr is the listen address (default ":9876").
	Addr string
	// BrokerTimeout evicts a broker not heard from for this long (120 s).
	BrokerTimeout time.Duration
	// ScanInterval is how often the eviction scan runs (10 s).
	ScanInterval time.Duration
	// Remoting configures the listener (frame limit, concurrency).
	Remoting remoting.ServerConfig
	// Logger receives the server's logs; nil discards them.
	Logger hclog.Logger
}

// DefaultConfig returns RocketMQ's defaults.
func DefaultConfig() Config {
	return Config{
		Addr:          ":9876",
		BrokerTimeout: 120 * time.Second,
		ScanInterval:  10 * time.Second,
		Remoting:      remoting.DefaultServerConfig(),
	}
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("namesrv: Addr is empty"))
	}
	if c.BrokerTimeout <= 0 {
		errs = append(errs, fmt.Errorf("namesrv: BrokerTimeout %v must be positive", c.BrokerTimeout))
	}
	if c.ScanInterval <= 0 {
		errs = append(errs, fmt.Errorf("namesrv: ScanInterval %v must be positive", c.ScanInterval))
	}
	if err := c.Remoting.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Server is a running name server.
type Server struct {
	cfg    Config
	log    hclog.Logger
	table  *Table
	kv     *kvStore
	rs     *remoting.Server
	stop   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once
}

// New builds a server; Serve or ListenAndServe starts it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	log = log.Named("namesrv")
	rcfg := cfg.Remoting
	rcfg.Logger = log
	rs, err := remoting.NewServer(rcfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, table: NewTable(), kv: newKVStore(), rs: rs, stop: make(chan struct{})}
	s.routes()
	rs.OnConnClose(func(c *remoting.Conn) { s.table.ConnClosed(c.ID()) })
	return s, nil
}

// Table exposes the route registry (for tests and the dev command).
func (s *Server) Table() *Table { return s.table }

// Addr is the listening address once serving.
func (s *Server) Addr() net.Addr { return s.rs.Addr() }

// ListenAndServe listens on cfg.Addr and serves until Shutdown.
func (s *Server) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("namesrv: listen %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ln)
}

// Serve serves on ln until Shutdown, running the eviction scan meanwhile.
func (s *Server) Serve(ln net.Listener) error {
	s.wg.Add(1)
	go s.scanLoop()
	return s.rs.Serve(ln)
}

// Shutdown stops the scan and the listener, waiting for in-flight requests
// until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closed.Do(func() { close(s.stop) })
	err := s.rs.Shutdown(ctx)
	s.wg.Wait()
	return err
}

func (s *Server) scanLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ScanInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			for _, addr := range s.table.Evict(now, s.cfg.BrokerTimeout) {
				s.log.Warn("evicted silent broker", "addr", addr, "timeout", s.cfg.BrokerTimeout)
			}
		}
	}
}

func (s *Server) routes() {
	s.rs.HandleFunc(remoting.ReqRegisterBroker, s.registerBroker)
	s.rs.HandleFunc(remoting.ReqUnregisterBroker, s.unregisterBroker)
	s.rs.HandleFunc(remoting.ReqGetRouteInfoByTopic, s.routeInfo)
	s.rs.HandleFunc(remoting.ReqGetBrokerClusterInfo, s.clusterInfo)
	s.rs.HandleFunc(remoting.ReqGetAllTopicListFromNameServer, s.topicList)
	s.rs.HandleFunc(remoting.ReqGetTopicsByCluster, s.topicsByCluster)
	s.rs.HandleFunc(remoting.ReqDeleteTopicInNamesrv, s.deleteTopic)
	s.rs.HandleFunc(remoting.ReqWipeWritePermOfBroker, s.writePerm(false, "wipeTopicCount"))
	s.rs.HandleFunc(remoting.ReqAddWritePermOfBroker, s.writePerm(true, "addTopicCount"))
	s.rs.HandleFunc(remoting.ReqPutKVConfig, s.putKV)
	s.rs.HandleFunc(remoting.ReqGetKVConfig, s.getKV)
	s.rs.HandleFunc(remoting.ReqDeleteKVConfig, s.deleteKV)
}

func fail(req *remoting.Command, code int16, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(req, code, fmt.Sprintf(format, args...))
}

func jsonResponse(req *remoting.Command, v any) *remoting.Command {
	b, err := json.Marshal(v)
	if err != nil {
		return fail(req, remoting.ResSystemError, "namesrv: encode answer: %v", err)
	}
	resp := remoting.NewResponse(req, remoting.ResSuccess, "")
	resp.Body = b
	return resp
}

func (s *Server) registerBroker(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := decodeRegistration(req)
	if err != nil {
		return fail(req, remoting.ResSystemError, "%v", err)
	}
	r.ConnID = c.ID()
	leader := s.table.Register(r, time.Now())
	if r.BrokerID == 0 && leader != r.BrokerAddr {
		s.log.Warn("stale leader registration recorded as follower",
			"broker", r.BrokerName, "addr", r.BrokerAddr, "term", r.RaftTerm, "leader", leader)
	}
	resp := remoting.NewResponse(req, remoting.ResSuccess, "")
	resp.ExtFields["masterAddr"] = leader
	resp.ExtFields["haServerAddr"] = ""
	return resp
}

func decodeRegistration(req *remoting.Command) (Registration, error) {
	ext := req.ExtFields
	r := Registration{Cluster: ext["clusterName"], BrokerName: ext["brokerName"], BrokerAddr: ext["brokerAddr"]}
	var errs []error
	for k, v := range map[string]string{"clusterName": r.Cluster, "brokerName": r.BrokerName, "brokerAddr": r.BrokerAddr} {
		if v == "" {
			errs = append(errs, fmt.Errorf("namesrv: REGISTER_BROKER without %s", k))
		}
	}
	id, err := strconv.ParseInt(ext["brokerId"], 10, 64)
	if err != nil {
		errs = append(errs, fmt.Errorf("namesrv: REGISTER_BROKER brokerId %q: %w", ext["brokerId"], err))
	}
	r.BrokerID = id
	if t := ext["raftTerm"]; t != "" {
		if r.RaftTerm, err = strconv.ParseUint(t, 10, 64); err != nil {
			errs = append(errs, fmt.Errorf("namesrv: REGISTER_BROKER raftTerm %q: %w", t, err))
		}
	}
	if ext["compressed"] == "true" {
		errs = append(errs, errors.New("namesrv: compressed REGISTER_BROKER bodies are not supported; send JSON"))
	}
	if len(errs) > 0 {
		return r, errors.Join(errs...)
	}
	r.Topics = map[string]protocol.TopicConfig{}
	if len(req.Body) > 0 {
		var body protocol.RegisterBrokerBody
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return r, fmt.Errorf("namesrv: REGISTER_BROKER body: %w", err)
		}
		if body.TopicConfigSerializeWrapper.TopicConfigTable != nil {
			r.Topics = body.TopicConfigSerializeWrapper.TopicConfigTable
		}
	}
	return r, nil
}

func (s *Server) unregisterBroker(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	name, addr := req.ExtFields["brokerName"], req.ExtFields["brokerAddr"]
	if name == "" || addr == "" {
		return fail(req, remoting.ResSystemError, "namesrv: UNREGISTER_BROKER needs brokerName and brokerAddr")
	}
	s.table.Unregister(name, addr)
	return remoting.NewResponse(req, remoting.ResSuccess, "")
}

func (s *Server) routeInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic := req.ExtFields["topic"]
	rd, ok := s.table.Route(topic)
	if !ok {
		return fail(req, remoting.ResTopicNotExist, "No topic route info in name server for the topic: %s", topic)
	}
	if conf, ok := s.kv.get(namespaceOrderTopic, topic); ok {
		rd.OrderTopicConf = conf
	}
	return jsonResponse(req, rd)
}

func (s *Server) clusterInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return jsonResponse(req, s.table.ClusterInfo())
}

func (s *Server) topicList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return jsonResponse(req, protocol.TopicList{TopicList: s.table.Topics("")})
}

func (s *Server) topicsByCluster(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	cluster := req.ExtFields["cluster"]
	if cluster == "" {
		return fail(req, remoting.ResSystemError, "namesrv: GET_TOPICS_BY_CLUSTER needs cluster")
	}
	return jsonResponse(req, protocol.TopicList{TopicList: s.table.Topics(cluster)})
}

func (s *Server) deleteTopic(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic := req.ExtFields["topic"]
	if topic == "" {
		return fail(req, remoting.ResSystemError, "namesrv: DELETE_TOPIC_IN_NAMESRV needs topic")
	}
	s.table.DeleteTopic(topic)
	return remoting.NewResponse(req, remoting.ResSuccess, "")
}

// writePerm serves WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327): header brokerName, answer ext
// wipeTopicCount / addTopicCount.
func (s *Server) writePerm(writable bool, countKey string) func(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
	return func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		h := protocol.ReadHeader(req.ExtFields)
		name := h.Str("brokerName")
		if err := h.Err(); err != nil {
			return remoting.NewResponse(req, remoting.ResSystemError, err.Error())
		}
		n, ok := s.table.SetWritable(name, writable)
		if !ok {
			return remoting.NewResponse(req, remoting.ResSystemError, "no broker group "+strconv.Quote(name)+" is registered here")
		}
		resp := remoting.NewResponse(req, remoting.ResSuccess, "")
		resp.ExtFields[countKey] = strconv.Itoa(n)
		return resp
	}
}
