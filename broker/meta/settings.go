package meta

import (
	"maps"
	"slices"

	"github.com/raftmq/raftmq/dledger"
	"github.com/raftmq/raftmq/internal/wire"
)

// CmdBrokerSettings sets broker settings of the group that may change at
// run time (UPDATE_BROKER_CONFIG), by RocketMQ's names.
const CmdBrokerSettings dledger.CommandType = 18

// BrokerSettingsCommand sets some of the group's run-time settings:
// RocketMQ config names to their values as text, checked by the broker
// before it proposes them. Settings not named keep their value.
type BrokerSettingsCommand struct{ Settings map[string]string }

// Type implements dledger.Command.
func (*BrokerSettingsCommand) Type() dledger.CommandType { return CmdBrokerSettings }

// AppendBody implements dledger.Command: count, then key and value
// strings sorted by key.
func (c *BrokerSettingsCommand) AppendBody(b []byte) ([]byte, error) {
	e := encoder(b)
	encodeSettings(e, c.Settings)
	return e.B, e.Err
}

func encodeSettings(e *wire.Encoder, m map[string]string) {
	e.Count(len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		e.Str(k)
		e.Str(m[k])
	}
}

func decodeSettings(d *wire.Decoder) map[string]string {
	m := map[string]string{}
	for i, n := 0, d.Count(2); i < n && d.Err == nil; i++ {
		k := d.Str()
		m[k] = d.Str()
	}
	return m
}

// Settings returns the run-time settings the group has set (a copy; empty
// when none was) and a generation that changes whenever they do.
func (s *State) Settings() (map[string]string, uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.settings), s.settingsGen.Load()
}

// SettingsGen is the settings' generation, read without a lock: a cache of
// parsed settings is stale when it differs.
func (s *State) SettingsGen() uint64 { return s.settingsGen.Load() }

func (s *State) applySettings(c *BrokerSettingsCommand) {
	for k, v := range c.Settings {
		s.settings[k] = v
	}
	s.settingsGen.Add(1)
}
