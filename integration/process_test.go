package integration

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftmq/raftmq/remoting"
)

// proc is a raftmq process started by a test; it is killed at cleanup.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

type lockedWriter struct{ p *proc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(raftmqBin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{p}, lockedWriter{p}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("output of raftmq %v:\n%s", args, p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// wait waits for the process to exit and returns its exit error.
func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("process did not exit within %v", d)
		return nil
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		// The kernel may hand a just-closed port out again: never give
		// one twice in this process, or two nodes of a group collide.
		if !portsGiven[port] {
			portsGiven[port] = true
			return port
		}
	}
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// waitInvoke retries a request until the server answers or d passes.
func waitInvoke(t *testing.T, cl *remoting.Client, addr string, req *remoting.Command, d time.Duration) *remoting.Command {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := cl.Invoke(ctx, addr, req.Clone())
		cancel()
		if err == nil {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer from %s within %v: %v", addr, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNamesrvProcessServesAndStopsOnSIGTERM(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p := startProc(t, "namesrv", "--listen", addr, "--log-level", "warn")
	cl, err := remoting.NewClient(remoting.DefaultClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp := waitInvoke(t, cl, addr, remoting.NewRequest(remoting.ReqGetRouteInfoByTopic, map[string]string{"topic": "none"}, nil), 10*time.Second)
	if resp.Code != remoting.ResTopicNotExist {
		t.Fatalf("route of unknown topic = %v", resp)
	}
	// Garbage on another connection closes that connection only.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.Write([]byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4})
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := raw.Read(make([]byte, 1)); err == nil {
		t.Fatalf("connection that sent an oversized frame length read %d bytes instead of closing", n)
	}
	raw.Close()
	resp = waitInvoke(t, cl, addr, remoting.NewRequest(remoting.ReqGetAllTopicListFromNameServer, nil, nil), 5*time.Second)
	if resp.Code != remoting.ResSuccess {
		t.Fatalf("after garbage: %v", resp)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t, 15*time.Second); err != nil {
		t.Fatalf("namesrv exit after SIGTERM: %v\n%s", err, p.output())
	}
}

// runCLIEnv runs one raftmq command to its end with env added to the
// environment and returns its output; a failure fails the test.
func runCLIEnv(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(raftmqBin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("raftmq %v: %v\n%s", args, err, out)
	}
	return string(out)
}
