package remoting

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"testing"
)

// benchSend is shaped like a SEND_MESSAGE from the Go client: fourteen ext
// fields and a 1 KiB body.
func benchSend(st SerializeType) *Command {
	cmd := NewRequest(ReqSendMessage, map[string]string{
		"producerGroup": "please_rename_unique_group_name", "topic": "TopicTest", "queueId": "3",
		"sysFlag": "0", "bornTimestamp": "1764681234567", "flag": "0", "reconsumeTimes": "0",
		"unitMode": "false", "maxReconsumeTimes": "16", "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "batch": "false", "bname": "broker-a",
		"properties": "TAGS\x01TagA\x02KEYS\x01order-42\x02UNIQ_KEY\x017F00000100002A9F0000000000000001\x02WAIT\x01true\x02",
	}, bytes.Repeat([]byte("x"), 1024))
	cmd.Opaque = 12345
	cmd.SerializeType = st
	return cmd
}

func BenchmarkEncode(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(st.String(), func(b *testing.B) {
			cmd := benchSend(st)
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = AppendEncode(buf[:0], cmd); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(st.String(), func(b *testing.B) {
			frame, err := Encode(benchSend(st))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(frame[4:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInvoke is a loopback round trip: client encode, TCP, server
// decode, handler goroutine, response encode, TCP, client decode.
func BenchmarkInvoke(b *testing.B) {
	scfg := DefaultServerConfig()
	scfg.Logger = nil
	s, err := NewServer(scfg)
	if err != nil {
		b.Fatal(err)
	}
	s.HandleFunc(ReqSendMessage, func(_ context.Context, _ *Conn, req *Command) *Command {
		resp := NewResponse(req, ResSuccess, "")
		resp.ExtFields["msgId"] = "7F00000100002A9F0000000000000001"
		resp.ExtFields["queueId"] = req.ExtFields["queueId"]
		resp.ExtFields["queueOffset"] = strconv.Itoa(int(req.Opaque))
		return resp
	})
	ln := mustListenB(b)
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	ccfg := DefaultClientConfig()
	ccfg.Logger = nil
	cl, err := NewClient(ccfg)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cl.Close()
		_ = s.Close()
		<-served
	}()
	addr := ln.Addr().String()
	ctx := context.Background()
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		cmd := benchSend(st)
		b.Run(st.String()+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cl.Invoke(ctx, addr, cmd); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(st.String()+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := cl.Invoke(ctx, addr, cmd); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func mustListenB(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}
