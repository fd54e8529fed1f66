package remoting

import (
	"errors"
	"strings"
	"testing"
)

func TestRequestResponseFlags(t *testing.T) {
	req := NewRequest(ReqSendMessage, nil, []byte("x"))
	req.Opaque = 77
	req.SerializeType = SerializeRocketMQ
	if req.IsResponse() || req.IsOneway() || req.ExtFields == nil || req.Language != LanguageGo || req.Version != ProtocolVersion {
		t.Fatalf("NewRequest = %+v", req)
	}
	req.MarkOneway()
	if !req.IsOneway() || req.IsResponse() {
		t.Fatalf("after MarkOneway flag = %d", req.Flag)
	}
	resp := NewResponse(req, ResTopicNotExist, "no route")
	if !resp.IsResponse() || resp.Opaque != 77 || resp.SerializeType != SerializeRocketMQ || resp.Code != ResTopicNotExist ||
		resp.Remark != "no route" || resp.ExtFields == nil {
		t.Fatalf("NewResponse = %+v", resp)
	}
	c := &Command{Flag: FlagOneway}
	c.MarkResponse()
	if c.Flag != FlagOneway|FlagResponse {
		t.Fatalf("MarkResponse flag = %d", c.Flag)
	}
}

func TestCloneIsolatesExt(t *testing.T) {
	a := NewRequest(1, map[string]string{"k": "v"}, nil)
	b := a.Clone()
	b.ExtFields["k"] = "changed"
	if a.ExtFields["k"] != "v" {
		t.Fatal("Clone shares ExtFields")
	}
}

func TestCodeNames(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{CodeName(ReqSendMessage), "SEND_MESSAGE"},
		{CodeName(ReqGetRouteInfoByTopic), "GET_ROUTEINFO_BY_TOPIC"},
		{CodeName(9999), "REQUEST_9999"},
		{ResponseCodeName(ResFlushDiskTimeout), "FLUSH_DISK_TIMEOUT"},
		{ResponseCodeName(-3), "RESPONSE_-3"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if !strings.Contains(NewResponse(&Command{}, ResPullNotFound, "").String(), "PULL_NOT_FOUND") {
		t.Error("String of a response must use the response code name")
	}
}

func TestAsError(t *testing.T) {
	if err := AsError(&Command{Code: ResSuccess}); err != nil {
		t.Fatalf("AsError(SUCCESS) = %v", err)
	}
	for _, code := range []int16{ResSystemError, ResSystemBusy, ResServiceNotAvailable, ResNoPermission,
		ResTopicNotExist, ResPullNotFound, ResMessageIllegal, ResRequestCodeNotSupported} {
		err := AsError(&Command{Code: code, Remark: "why"})
		var re *ResponseError
		if !errors.As(err, &re) || re.Code != code || re.Remark != "why" {
			t.Fatalf("AsError(%d) = %v", code, err)
		}
		if !strings.Contains(err.Error(), ResponseCodeName(code)) || !strings.Contains(err.Error(), "why") {
			t.Errorf("Error() = %q lacks name or remark", err.Error())
		}
	}
}
