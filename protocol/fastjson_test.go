package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestFastJSONQueueKeysAsJavaWritesThem(t *testing.T) {
	body := ResetOffsetBody{OffsetTable: MQMap[int64]{
		{Topic: "t", BrokerName: "b", QueueID: 1}: 7,
		{Topic: "t", BrokerName: "b", QueueID: 0}: 5,
	}}
	got, err := MarshalFastJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"offsetTable":{{"topic":"t","brokerName":"b","queueId":0}:5,{"topic":"t","brokerName":"b","queueId":1}:7}}`
	if string(got) != want {
		t.Fatalf("fastjson body\n got %s\nwant %s", got, want)
	}
	var back ResetOffsetBody
	if err := UnmarshalFastJSON(got, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, body) {
		t.Fatalf("round trip: %+v, want %+v", back, body)
	}
}

func TestFastJSONNestedAndWhitespace(t *testing.T) {
	// As the official Go client writes its running info: spaces after
	// commas, nested queue-keyed maps.
	in := `{"properties":{"a":"b"}, "mqTable":{{"brokerName":"b","queueId":2,"topic":"x,{y"}:{"commitOffset":9,"droped":true}}, "jstack":"{{"}`
	var info ConsumerRunningInfo
	if err := UnmarshalFastJSON([]byte(in), &info); err != nil {
		t.Fatal(err)
	}
	q := MessageQueue{Topic: "x,{y", BrokerName: "b", QueueID: 2}
	if p := info.MQTable[q]; p.CommitOffset != 9 || !p.Droped || info.Jstack != "{{" || info.Properties["a"] != "b" {
		t.Fatalf("decoded %+v", info)
	}
	list := ConsumeStatsList{ConsumeStatsList: []map[string][]ConsumeStats{{"g": {{OffsetTable: MQMap[OffsetWrapper]{q: {BrokerOffset: 3}}}}}}}
	b, err := MarshalFastJSON(list)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{{"topic":"x,{y","brokerName":"b","queueId":2}:{"brokerOffset":3`) {
		t.Fatalf("nested map not written fastjson's way: %s", b)
	}
	var back ConsumeStatsList
	if err := UnmarshalFastJSON(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.ConsumeStatsList[0]["g"][0].OffsetTable[q].BrokerOffset != 3 {
		t.Fatalf("nested round trip: %s -> %+v", b, back)
	}
}

func TestMQMapGsonForm(t *testing.T) {
	m := MQMap[int64]{{Topic: "t", BrokerName: "b", QueueID: 3}: 11}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `[[{"topic":"t","brokerName":"b","queueId":3},11]]` {
		t.Fatalf("gson form %s", b)
	}
	var back MQMap[int64]
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("gson round trip %v %v", back, err)
	}
	if err := UnmarshalFastJSON([]byte(`{"offsetTable":{{"topic":1}:2}}`), &ResetOffsetBody{}); err == nil {
		t.Fatal("a key that is not a MessageQueue decoded")
	}
}
