package remoting

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The frames in testdata/official-client were captured from the official
// rocketmq-client-go (v2.1.3-0.20251226070945-2173d070fd1b) talking to a
// server built from this package: integration's
// TestOfficialClientAgainstRemotingServer with RAFTMQ_UPDATE_FIXTURES=1
// writes the first frame of each request code the producer sent.

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "official-client", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOfficialClientFramesByteExact: for frames whose extFields have at most
// one key (so the client's unordered map encoding has one form) our encoder
// reproduces the client's bytes exactly.
func TestOfficialClientFramesByteExact(t *testing.T) {
	for _, tc := range []struct {
		file string
		code int16
		ext  map[string]string
	}{
		{"GET_ROUTEINFO_BY_TOPIC.frame", ReqGetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}},
		{"HEART_BEAT.frame", ReqHeartBeat, map[string]string{}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			frame := readFixture(t, tc.file)
			cmd, err := ReadCommand(bytes.NewReader(frame), DefaultMaxFrameSize)
			if err != nil {
				t.Fatalf("ReadCommand: %v", err)
			}
			if cmd.Code != tc.code || cmd.Language != "GO" || cmd.IsResponse() || cmd.SerializeType != SerializeJSON {
				t.Fatalf("decoded %v", cmd)
			}
			if len(cmd.ExtFields) != len(tc.ext) {
				t.Fatalf("ext = %v, want %v", cmd.ExtFields, tc.ext)
			}
			for k, v := range tc.ext {
				if cmd.ExtFields[k] != v {
					t.Fatalf("ext[%s] = %q, want %q", k, cmd.ExtFields[k], v)
				}
			}
			got, err := Encode(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, frame) {
				t.Fatalf("re-encoded frame differs from the client's:\n got %q\nwant %q", got, frame)
			}
		})
	}
}

// TestOfficialClientSendFrame: the client's SEND_MESSAGE (many ext keys in
// json-iterator's map order) decodes to the fields it sent, and our
// encoding of it carries the same header JSON value and the same body.
func TestOfficialClientSendFrame(t *testing.T) {
	frame := readFixture(t, "SEND_MESSAGE.frame")
	cmd, err := Decode(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Code != ReqSendMessage || string(cmd.Body) != "hello from the official client" {
		t.Fatalf("decoded %v body %q", cmd, cmd.Body)
	}
	for k, v := range map[string]string{
		"topic": "TopicTest", "producerGroup": "pg-compat", "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "sysFlag": "0", "batch": "false",
	} {
		if cmd.ExtFields[k] != v {
			t.Errorf("ext[%s] = %q, want %q", k, cmd.ExtFields[k], v)
		}
	}
	if !bytes.Contains([]byte(cmd.ExtFields["properties"]), []byte("TAGS\x01TagA\x02")) {
		t.Errorf("properties = %q lack TAGS", cmd.ExtFields["properties"])
	}
	ours, err := Encode(cmd)
	if err != nil {
		t.Fatal(err)
	}
	theirHeader, theirBody := splitFrame(t, frame)
	ourHeader, ourBody := splitFrame(t, ours)
	if !bytes.Equal(theirBody, ourBody) {
		t.Fatal("body differs after re-encoding")
	}
	var a, b any
	if err := json.Unmarshal(theirHeader, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ourHeader, &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("header JSON differs:\n ours %s\nclient %s", jb, ja)
	}
}

func splitFrame(t *testing.T, f []byte) (header, body []byte) {
	t.Helper()
	if len(f) < 8 {
		t.Fatalf("frame of %d bytes", len(f))
	}
	hl := int(f[5])<<16 | int(f[6])<<8 | int(f[7])
	return f[8 : 8+hl], f[8+hl:]
}
