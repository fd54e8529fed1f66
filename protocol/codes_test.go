package protocol

import (
	"testing"

	"github.com/raftmq/raftmq/remoting"
)

func TestRetriable(t *testing.T) {
	for code, want := range map[int16]bool{
		remoting.ResSystemError: true, remoting.ResSystemBusy: true, remoting.ResServiceNotAvailable: true,
		remoting.ResNoPermission: true, remoting.ResTopicNotExist: true, remoting.ResPullNotFound: false,
		remoting.ResMessageIllegal: false, remoting.ResRequestCodeNotSupported: false, remoting.ResSuccess: false,
	} {
		if got := Retriable(code); got != want {
			t.Errorf("Retriable(%s) = %v, want %v", remoting.ResponseCodeName(code), got, want)
		}
	}
	for code, want := range map[int16]bool{
		remoting.ResSystemError: true, remoting.ResServiceNotAvailable: true, remoting.ResSystemBusy: false,
		remoting.ResTopicNotExist: false,
	} {
		if got := Failover(code); got != want {
			t.Errorf("Failover(%s) = %v, want %v", remoting.ResponseCodeName(code), got, want)
		}
	}
}
