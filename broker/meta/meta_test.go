package meta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"reflect"
	"testing"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wire"
	"github.com/raftmq/raftmq/protocol"
)

func allCommands() []dledger.Command {
	return []dledger.Command{
		&CommitOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 3}, 42}, {OffsetKey{"g2", "t", 0}, -1}}},
		&ResetOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 1}, 7}}},
		&PutTopicCommand{Topic: TopicConfig{Name: "t", ReadQueueNums: 8, WriteQueueNums: 4, Perm: 6, TopicSysFlag: 1, Order: true, FilterType: 1}},
		&DeleteTopicCommand{Name: "t"},
		&PutSubscriptionGroupCommand{Group: SubscriptionGroupConfig{GroupName: "g", ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, BrokerID: 0, WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIdsChangedEnable: true}},
		&DeleteSubscriptionGroupCommand{Name: "g"},
		&DelayProgressCommand{Progress: []DelayProgress{{2, 100}, {17, 5}}},
		&TimerProgressCommand{Progress: TimerProgress{O: 10, T: 1700000000000, L: 4, K: 7}},
		&TxnEndCommand{HalfOffset: 7, Decision: TxnRolledBack},
		&TxnChecksCommand{Checks: []TxnCheck{{HalfOffset: 3, Times: 2, AtMs: 99}}},
		&ACLSeedCommand{Config: protocol.ACLConfig{GlobalWhiteAddrs: []string{"10.*.*.*"}, Accounts: []protocol.PlainAccessConfig{testAccount("alice1")}},
			Peer: protocol.PlainAccessConfig{AccessKey: "peer.g", SecretKey: "s3cret-peer", Admin: true}},
		&ACLPutAccountCommand{Account: testAccount("bob123")},
		&ACLDeleteAccountCommand{AccessKey: "bob123"},
		&ACLGlobalWhiteCommand{Addrs: []string{"127.0.0.1", "192.168.0.{1,2}"}},
		&BrokerPermissionCommand{Perm: 4},
		&BrokerSettingsCommand{Settings: map[string]string{"autoCreateTopicEnable": "false", "defaultTopicQueueNums": "4"}},
	}
}

func testAccount(ak string) protocol.PlainAccessConfig {
	return protocol.PlainAccessConfig{AccessKey: ak, SecretKey: "secret-" + ak, WhiteRemoteAddress: "10.0.0.1", DefaultTopicPerm: "SUB",
		DefaultGroupPerm: "DENY", TopicPerms: []string{"a=PUB", "b=PUB|SUB"}, GroupPerms: []string{"g=SUB"}}
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range allCommands() {
		b, err := c.AppendBody(nil)
		if err != nil {
			t.Fatalf("%T: encode: %v", c, err)
		}
		got, err := Decode(c.Type(), b)
		if err != nil {
			t.Fatalf("%T: decode: %v", c, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%T: got %+v, want %+v", c, got, c)
		}
		// Every strict prefix must fail to decode, never panic.
		for i := 0; i < len(b); i++ {
			if _, err := Decode(c.Type(), b[:i]); err == nil {
				t.Errorf("%T: prefix of %d bytes decoded", c, i)
			}
		}
		if _, err := Decode(c.Type(), append(b, 0)); !errors.Is(err, ErrBadCommand) {
			t.Errorf("%T: trailing byte: %v", c, err)
		}
	}
}

func TestUnknownAndReserved(t *testing.T) {
	if _, err := Decode(CmdTransactionState, []byte{0, 0, 0, 0, 0, 0, 0, 1, 9}); !errors.Is(err, ErrBadCommand) {
		t.Errorf("decision 9: %v", err)
	}
	if _, err := Decode(200, nil); !errors.Is(err, ErrBadCommand) {
		t.Errorf("unknown type: %v", err)
	}
	if err := NewState().Apply(1, 200, nil); !errors.Is(err, ErrBadCommand) {
		t.Errorf("Apply of an unknown type: %v", err)
	}
}

func TestApplyAndSnapshotRoundTrip(t *testing.T) {
	s := NewState()
	for i, c := range []dledger.Command{
		&PutTopicCommand{Topic: TopicConfig{Name: "t", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
		&PutTopicCommand{Topic: TopicConfig{Name: "u", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
		&PutSubscriptionGroupCommand{Group: SubscriptionGroupConfig{GroupName: "g", ConsumeEnable: true}},
		&CommitOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 1}, 10}, {OffsetKey{"g", "u", 0}, 3}}},
		&ResetOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 1}, 4}}},
		&DelayProgressCommand{Progress: []DelayProgress{{QueueID: 2, Offset: 9}}},
		&TimerProgressCommand{Progress: TimerProgress{O: 5, T: 99, L: 2, K: 4}},
		&DeleteTopicCommand{Name: "u"},
		&BrokerPermissionCommand{Perm: protocol.PermRead},
		&BrokerSettingsCommand{Settings: map[string]string{"autoCreateTopicEnable": "false", "longPollingEnable": "true"}},
		&BrokerSettingsCommand{Settings: map[string]string{"longPollingEnable": "false"}},
	} {
		b, _ := c.AppendBody(nil)
		if err := s.Apply(uint64(i+1), c.Type(), b); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := s.Topic("u"); ok {
		t.Error("deleted topic u present")
	}
	if o, _ := s.ConsumerOffset(OffsetKey{"g", "t", 1}); o != 4 {
		t.Errorf("offset %d, want 4 after the reset", o)
	}
	if _, ok := s.ConsumerOffset(OffsetKey{"g", "u", 0}); ok {
		t.Error("offset of the deleted topic kept")
	}
	if d, _ := s.DelayOffset(2); d != 9 || s.Timer() != (TimerProgress{5, 99, 2, 4}) || s.AppliedIndex() != 11 || s.BrokerPermission() != protocol.PermRead {
		t.Errorf("delay %d, timer %+v, applied %d", d, s.Timer(), s.AppliedIndex())
	}
	b, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r := NewState()
	if err := r.Restore(b); err != nil {
		t.Fatal(err)
	}
	rb, _ := r.Snapshot()
	if !bytes.Equal(rb, b) {
		t.Error("re-encoded snapshot differs")
	}
	if g, ok := r.SubscriptionGroup("g"); !ok || !g.ConsumeEnable || len(r.Topics()) != 1 || len(r.ConsumerOffsets("g")) != 1 ||
		r.BrokerPermission() != protocol.PermRead {
		t.Errorf("restored %+v", r)
	}
	if set, gen := r.Settings(); !maps.Equal(set, map[string]string{"autoCreateTopicEnable": "false", "longPollingEnable": "false"}) || gen == 0 {
		t.Errorf("restored settings %v (generation %d)", set, gen)
	}
	for i := 0; i < len(b); i++ {
		if err := NewState().Restore(b[:i]); err == nil {
			t.Errorf("snapshot prefix of %d bytes restored", i)
		}
	}
}

func TestCommitOffsetsMerge(t *testing.T) {
	a := &CommitOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 0}, 1}}}
	b := &CommitOffsetsCommand{Offsets: []ConsumerOffset{{OffsetKey{"g", "t", 0}, 5}, {OffsetKey{"g", "t", 1}, 2}}}
	m := a.Merge([]dledger.Command{b}).(*CommitOffsetsCommand)
	if m.Len() != 3 || len(a.Offsets) != 1 {
		t.Fatalf("merged %+v, receiver %+v", m, a)
	}
	s := NewState()
	body, _ := m.AppendBody(nil)
	if err := s.Apply(1, m.Type(), body); err != nil {
		t.Fatal(err)
	}
	if o, _ := s.ConsumerOffset(OffsetKey{"g", "t", 0}); o != 5 {
		t.Errorf("merged commit applied %d, want the later 5", o)
	}
}

func FuzzDecode(f *testing.F) {
	for _, c := range allCommands() {
		b, _ := c.AppendBody(nil)
		f.Add(uint8(c.Type()), b)
	}
	s, _ := NewState().Snapshot()
	f.Add(uint8(0), s)
	f.Fuzz(func(t *testing.T, typ uint8, b []byte) {
		_, _ = Decode(dledger.CommandType(typ), b)
		_ = NewState().Restore(b)
	})
}

func applyAll(t *testing.T, s *State, cmds ...dledger.Command) {
	t.Helper()
	for _, c := range cmds {
		b, _ := c.AppendBody(nil)
		if err := s.Apply(s.AppliedIndex()+1, c.Type(), b); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTxnState: decisions advance the low watermark over the decided
// prefix, a decided half ignores later decisions and check-backs, and the
// state survives a snapshot.
func TestTxnState(t *testing.T) {
	s := NewState()
	applyAll(t, s,
		&TxnChecksCommand{Checks: []TxnCheck{{HalfOffset: 0, Times: 1, AtMs: 10}, {HalfOffset: 2, Times: 1, AtMs: 10}}},
		&TxnEndCommand{HalfOffset: 1, Decision: TxnRolledBack},
		&TxnEndCommand{HalfOffset: 1, Decision: TxnCommitted}, // ignored: decided
	)
	if d, ok := s.TxnDecided(1); !ok || d != TxnRolledBack || s.TxnLow() != 0 {
		t.Fatalf("half 1: %v %v, low %d", d, ok, s.TxnLow())
	}
	if c := s.TxnCheckOf(0); c.Times != 1 || c.AtMs != 10 {
		t.Fatalf("check of 0: %+v", c)
	}
	applyAll(t, s, &TxnEndCommand{HalfOffset: 0, Decision: TxnCommitted},
		&TxnChecksCommand{Checks: []TxnCheck{{HalfOffset: 0, Times: 5}}}) // ignored: decided
	if s.TxnLow() != 2 || s.TxnCheckOf(0) != (TxnCheck{}) {
		t.Fatalf("low %d (want 2), check of decided 0 %+v", s.TxnLow(), s.TxnCheckOf(0))
	}
	if _, ok := s.TxnDecided(2); ok {
		t.Fatal("undecided half 2 reported decided")
	}
	b, _ := s.Snapshot()
	r := NewState()
	if err := r.Restore(b); err != nil {
		t.Fatal(err)
	}
	if d, _ := r.TxnDecided(0); d != TxnCommitted || r.TxnLow() != 2 || r.TxnCheckOf(2).Times != 1 {
		t.Fatalf("restored: decision %v low %d check %+v", d, r.TxnLow(), r.TxnCheckOf(2))
	}
}

// TestTimerProgressWithoutTieCursor: timer progress written before the tie
// cursor existed (type 10, snapshot version 1) reads as "every tie of T
// delivered".
func TestTimerProgressWithoutTieCursor(t *testing.T) {
	var b []byte
	for _, v := range []int64{5, 99, 2} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	c, err := Decode(CmdTimerProgress, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.(*TimerProgressCommand).Progress; got != (TimerProgress{5, 99, 2, TimerAllTies}) {
		t.Fatalf("decoded %+v", got)
	}
	s := NewState()
	body, _ := (&TimerProgressCommand{Progress: TimerProgress{O: 5, T: 99, L: 2, K: 3}}).AppendBody(nil)
	if err := s.Apply(1, CmdTimerProgressTies, body); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	acl := &wire.Encoder{}
	s.acl.encode(acl)
	// Version 1 lacks the tie cursor (8 bytes), the ACL, brokerPermission
	// (4) and the settings (an empty count, 4).
	v1 := append([]byte{1}, snap[1:len(snap)-8-len(acl.B)-4-4]...)
	r := NewState()
	if err := r.Restore(v1); err != nil {
		t.Fatalf("version 1 snapshot: %v", err)
	}
	if got := r.Timer(); got != (TimerProgress{5, 99, 2, TimerAllTies}) {
		t.Fatalf("restored %+v", got)
	}
	for _, c := range []struct {
		off, at int64
		want    bool
	}{{4, 98, true}, {2, 99, true}, {3, 99, false}, {4, 100, false}, {5, 10, false}} {
		if got := s.Timer().Delivered(c.off, c.at); got != c.want {
			t.Errorf("Delivered(%d, %d) = %v with %+v", c.off, c.at, got, s.Timer())
		}
	}
}

// TestACLState: the first seed enables the ACL and a later one does
// nothing; accounts and the global whitelist change by command; the
// version is the index of the last change; a snapshot carries it all, and
// a version-2 snapshot (before the ACL) restores as disabled.
func TestACLState(t *testing.T) {
	s := NewState()
	if s.ACL().Enabled {
		t.Fatal("enabled before a seed")
	}
	applyAll(t, s,
		&ACLSeedCommand{Config: protocol.ACLConfig{Accounts: []protocol.PlainAccessConfig{testAccount("alice1")}},
			Peer: protocol.PlainAccessConfig{AccessKey: "peer.g", SecretKey: "peer-secret", Admin: true}},
		&ACLSeedCommand{Config: protocol.ACLConfig{Accounts: []protocol.PlainAccessConfig{testAccount("mallory")}}},
		&ACLPutAccountCommand{Account: testAccount("bob123")},
		&ACLGlobalWhiteCommand{Addrs: []string{"10.1.1.1"}},
		&PutTopicCommand{Topic: TopicConfig{Name: "t", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}},
	)
	a := s.ACL()
	if !a.Enabled || a.Version != 4 || len(a.Config.Accounts) != 2 || a.Config.Accounts[0].AccessKey != "alice1" ||
		a.Config.Accounts[1].AccessKey != "bob123" || a.Peer.AccessKey != "peer.g" || len(a.Config.GlobalWhiteAddrs) != 1 {
		t.Fatalf("after the changes: %+v", a)
	}
	applyAll(t, s, &ACLDeleteAccountCommand{AccessKey: "alice1"})
	b, _ := s.Snapshot()
	r := NewState()
	if err := r.Restore(b); err != nil {
		t.Fatal(err)
	}
	if got := r.ACL(); !reflect.DeepEqual(got, s.ACL()) || len(got.Config.Accounts) != 1 || got.Version != 6 {
		t.Fatalf("restored %+v, want %+v", got, s.ACL())
	}
	acl := &wire.Encoder{}
	s.acl.encode(acl)
	// The tail is the ACL, brokerPermission (4 bytes) and the settings (an
	// empty count, 4 bytes): version 3 lacks the settings, 2 all three.
	v3 := append([]byte{3}, b[1:len(b)-4]...)
	if err := NewState().Restore(v3); err != nil {
		t.Fatalf("version 3 snapshot: %v", err)
	}
	v2 := append([]byte{2}, b[1:len(b)-len(acl.B)-4-4]...)
	old := NewState()
	if err := old.Restore(v2); err != nil {
		t.Fatalf("version 2 snapshot: %v", err)
	}
	if old.ACL().Enabled {
		t.Fatal("a version 2 snapshot restored an ACL")
	}
}
