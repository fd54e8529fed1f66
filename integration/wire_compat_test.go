package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/raftmq/raftmq/message"
	"github.com/raftmq/raftmq/remoting"
)

// TestOfficialClientAgainstRemotingServer runs the official Go producer
// against a server built from remoting/ that plays name server and broker:
// it answers GET_ROUTEINFO_BY_TOPIC, HEART_BEAT and SEND_MESSAGE. The
// producer's send succeeding with our msgId and queue offset proves the
// client decoded our frames; the server decoding the client's requests
// (checked field by field) proves the reverse. With RAFTMQ_UPDATE_FIXTURES=1
// it writes the client's raw frames to remoting/testdata/official-client,
// where remoting's fixture test replays them.
func TestOfficialClientAgainstRemotingServer(t *testing.T) {
	rlog.SetLogLevel("error")
	rec := newRecorder()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	fb := newFakeBroker(addr)
	srv, err := remoting.NewServer(remoting.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	fb.register(srv)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(&recordingListener{Listener: ln, rec: rec}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-done
	})

	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{addr})),
		producer.WithGroupName("pg-compat"),
		producer.WithInstanceName(fmt.Sprintf("compat-%d", time.Now().UnixNano())),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()

	msg := primitive.NewMessage("TopicTest", []byte("hello from the official client"))
	msg.WithTag("TagA")
	msg.WithKeys([]string{"k1", "k2"})
	res, err := p.SendSync(context.Background(), msg)
	if err != nil {
		t.Fatalf("SendSync: %v", err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("status = %v, want SendOK", res.Status)
	}
	wantID := message.EncodeOffsetMsgID(netip.MustParseAddrPort(addr), 4096)
	if res.OffsetMsgID != wantID || res.QueueOffset != 17 || res.MessageQueue.QueueId != 2 ||
		res.MessageQueue.BrokerName != "broker-a" {
		t.Fatalf("send result = %+v, want offsetMsgId %s queueOffset 17 queue 2 broker-a", res, wantID)
	}

	sent := fb.waitSend(t)
	if sent.ExtFields["topic"] != "TopicTest" && sent.ExtFields["b"] != "TopicTest" {
		t.Errorf("send ext = %v, want topic TopicTest", sent.ExtFields)
	}
	if string(sent.Body) != "hello from the official client" {
		t.Errorf("send body = %q", sent.Body)
	}
	props := sent.ExtFields["properties"]
	if props == "" {
		props = sent.ExtFields["i"]
	}
	pm, err := message.DecodeProperties([]byte(props))
	if err != nil || pm[message.PropertyTags] != "TagA" || pm[message.PropertyKeys] != "k1 k2" {
		t.Errorf("send properties = %v, %v", pm, err)
	}

	// The first heartbeat goes out about a second after Start, once the
	// route above made the broker known.
	hb := fb.waitHeartbeat(t, 40*time.Second)
	var body struct {
		ClientID        string `json:"clientID"`
		ProducerDataSet []struct {
			GroupName string `json:"groupName"`
		} `json:"producerDataSet"`
	}
	if err := json.Unmarshal(hb.Body, &body); err != nil {
		t.Fatalf("heartbeat body %q: %v", hb.Body, err)
	}
	if body.ClientID == "" || len(body.ProducerDataSet) == 0 || body.ProducerDataSet[0].GroupName != "pg-compat" {
		t.Errorf("heartbeat body = %s", hb.Body)
	}

	frames := rec.frames(t)
	seen := map[int16]bool{}
	for _, f := range frames {
		cmd, err := remoting.Decode(f[4:])
		if err != nil {
			t.Fatalf("captured frame does not decode: %v", err)
		}
		seen[cmd.Code] = true
		// Our encoding of what we decoded decodes to the same command.
		again, err := remoting.Encode(cmd)
		if err != nil {
			t.Fatal(err)
		}
		back, err := remoting.Decode(again[4:])
		if err != nil || back.String() != cmd.String() || !bytes.Equal(back.Body, cmd.Body) {
			t.Errorf("re-encode of code %d differs: %v", cmd.Code, err)
		}
	}
	for _, code := range []int16{remoting.ReqGetRouteInfoByTopic, remoting.ReqHeartBeat} {
		if !seen[code] {
			t.Errorf("no captured frame with code %d", code)
		}
	}
	if os.Getenv("RAFTMQ_UPDATE_FIXTURES") == "1" {
		writeFixtures(t, frames)
	}
}

// fakeBroker answers the few codes a producer needs.
type fakeBroker struct {
	addr      string
	sends     chan *remoting.Command
	heartbeat chan *remoting.Command
}

func newFakeBroker(addr string) *fakeBroker {
	return &fakeBroker{addr: addr, sends: make(chan *remoting.Command, 16), heartbeat: make(chan *remoting.Command, 16)}
}

func (b *fakeBroker) register(s *remoting.Server) {
	s.HandleFunc(remoting.ReqGetRouteInfoByTopic, b.route)
	s.HandleFunc(remoting.ReqHeartBeat, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		select {
		case b.heartbeat <- req:
		default:
		}
		return remoting.NewResponse(req, remoting.ResSuccess, "")
	})
	for _, code := range []int16{remoting.ReqSendMessage, remoting.ReqSendMessageV2} {
		s.HandleFunc(code, b.send)
	}
}

func (b *fakeBroker) route(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.ExtFields["topic"] != "TopicTest" {
		return remoting.NewResponse(req, remoting.ResTopicNotExist, "No topic route info in name server for the topic: "+req.ExtFields["topic"])
	}
	resp := remoting.NewResponse(req, remoting.ResSuccess, "")
	resp.Body = []byte(`{"orderTopicConf":"","queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],"brokerDatas":[{"cluster":"c1","brokerName":"broker-a","brokerAddrs":{"0":"` + b.addr + `"}}]}`)
	return resp
}

func (b *fakeBroker) send(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	select {
	case b.sends <- req:
	default:
	}
	resp := remoting.NewResponse(req, remoting.ResSuccess, "")
	resp.ExtFields = map[string]string{
		"msgId":       message.EncodeOffsetMsgID(netip.MustParseAddrPort(b.addr), 4096),
		"queueId":     strconv.Itoa(2),
		"queueOffset": strconv.Itoa(17),
	}
	return resp
}

func (b *fakeBroker) waitSend(t *testing.T) *remoting.Command {
	t.Helper()
	select {
	case c := <-b.sends:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no SEND_MESSAGE arrived")
		return nil
	}
}

func (b *fakeBroker) waitHeartbeat(t *testing.T, d time.Duration) *remoting.Command {
	t.Helper()
	select {
	case c := <-b.heartbeat:
		return c
	case <-time.After(d):
		t.Fatalf("no HEART_BEAT within %v", d)
		return nil
	}
}

// recorder keeps every byte clients sent, per connection.
type recorder struct {
	mu    sync.Mutex
	conns []*bytes.Buffer
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) add() *bytes.Buffer {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := &bytes.Buffer{}
	r.conns = append(r.conns, b)
	return b
}

// frames splits the recorded streams into whole frames (length prefix
// included).
func (r *recorder) frames(t *testing.T) [][]byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]byte
	for _, c := range r.conns {
		br := bufio.NewReader(bytes.NewReader(c.Bytes()))
		for {
			var hdr [4]byte
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				break
			}
			n := binary.BigEndian.Uint32(hdr[:])
			f := make([]byte, 4+int(n))
			copy(f, hdr[:])
			if _, err := io.ReadFull(br, f[4:]); err != nil {
				t.Fatalf("truncated captured frame: %v", err)
			}
			out = append(out, f)
		}
	}
	return out
}

type recordingListener struct {
	net.Listener
	rec *recorder
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, buf: l.rec.add(), mu: &l.rec.mu}, nil
}

type recordingConn struct {
	net.Conn
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.buf.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func writeFixtures(t *testing.T, frames [][]byte) {
	dir := filepath.Join("..", "remoting", "testdata", "official-client")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	written := map[int16]bool{}
	for _, f := range frames {
		cmd, _ := remoting.Decode(f[4:])
		if written[cmd.Code] {
			continue
		}
		written[cmd.Code] = true
		name := filepath.Join(dir, fmt.Sprintf("%s.frame", remoting.CodeName(cmd.Code)))
		if err := os.WriteFile(name, f, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", name, len(f))
	}
}
