package client

import (
	"testing"

	"github.com/raftmq/raftmq/protocol"
)

// TestFillSubAfterTimes: a SubAfter without timestamp or group (older
// clients) takes its SubBefore's, plus its cost; one with its own keeps it.
func TestFillSubAfterTimes(t *testing.T) {
	rs := []protocol.TraceRecord{
		{Type: protocol.TraceSubAfter, RequestID: "Q1", CostTime: 7},
		{Type: protocol.TraceSubBefore, RequestID: "Q1", Timestamp: 100, Group: "cg"},
		{Type: protocol.TraceSubAfter, RequestID: "Q2", Timestamp: 500, Group: "other", CostTime: 1},
		{Type: protocol.TraceSubBefore, RequestID: "Q2", Timestamp: 400, Group: "cg"},
		{Type: protocol.TraceSubAfter, RequestID: "Q3"}, // no SubBefore: left as is
	}
	fillSubAfterTimes(rs)
	if rs[0].Timestamp != 107 || rs[0].Group != "cg" {
		t.Errorf("old-layout SubAfter = %+v, want timestamp 107 and group cg", rs[0])
	}
	if rs[2].Timestamp != 500 || rs[2].Group != "other" {
		t.Errorf("SubAfter with its own time = %+v", rs[2])
	}
	if rs[4].Timestamp != 0 || rs[4].Group != "" {
		t.Errorf("unmatched SubAfter = %+v", rs[4])
	}
}
