package broker

// Run-time settings: the broker settings UPDATE_BROKER_CONFIG may change
// while the group runs. Each is the node's flag value until the group sets
// it through raft (meta.BrokerSettingsCommand); then every node of the
// group uses the group's value, across restarts and snapshots. Readers
// get the current values without a lock; they are re-parsed only when
// the group's settings changed.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/raftmq/raftmq/broker/meta"
	"github.com/raftmq/raftmq/protocol"
)

// settingValues are the run-time settings in effect.
type settingValues struct {
	autoCreateTopic  bool
	defaultQueueNums int32
	longPolling      bool
	txnTimeout       time.Duration
	txnCheckInterval time.Duration
	txnCheckMax      int32
	// Follower reads (follower_read.go).
	slaveRead bool
	memRatio  int
	memBytes  int64

	gen uint64 // the meta settings generation they were parsed at
}

// runtimeSetting parses one setting's text into v, or says why not.
type runtimeSetting func(value string, v *settingValues) error

// runtimeSettingsByName are the settings that may change at run time, by
// RocketMQ's names.
var runtimeSettingsByName = map[string]runtimeSetting{
	"autoCreateTopicEnable": func(s string, v *settingValues) (err error) {
		v.autoCreateTopic, err = strconv.ParseBool(s)
		return err
	},
	"defaultTopicQueueNums": func(s string, v *settingValues) error {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 1 || n > protocol.MaxQueueNums {
			return fmt.Errorf("want a queue count from 1 to %d", protocol.MaxQueueNums)
		}
		v.defaultQueueNums = int32(n)
		return nil
	},
	"longPollingEnable": func(s string, v *settingValues) (err error) {
		v.longPolling, err = strconv.ParseBool(s)
		return err
	},
	"slaveReadEnable": func(s string, v *settingValues) (err error) {
		v.slaveRead, err = strconv.ParseBool(s)
		return err
	},
	"accessMessageInMemoryMaxRatio": func(s string, v *settingValues) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 100 {
			return fmt.Errorf("want a percentage from 0 to 100")
		}
		v.memRatio = n
		return nil
	},
	"accessMessageInMemoryMaxBytes": func(s string, v *settingValues) error {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("want a byte count, 0 to use accessMessageInMemoryMaxRatio")
		}
		v.memBytes = n
		return nil
	},
	"transactionTimeOut":       millis(func(v *settingValues) *time.Duration { return &v.txnTimeout }),
	"transactionCheckInterval": millis(func(v *settingValues) *time.Duration { return &v.txnCheckInterval }),
	"transactionCheckMax": func(s string, v *settingValues) error {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 1 {
			return fmt.Errorf("want a positive count")
		}
		v.txnCheckMax = int32(n)
		return nil
	},
}

// millis parses a positive duration in milliseconds into the field f picks.
func millis(f func(*settingValues) *time.Duration) runtimeSetting {
	return func(s string, v *settingValues) error {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 || n > int64(24*time.Hour/time.Millisecond) {
			return fmt.Errorf("want milliseconds from 1 to %d", int64(24*time.Hour/time.Millisecond))
		}
		*f(v) = time.Duration(n) * time.Millisecond
		return nil
	}
}

// runtimeSettingNames are the settings that may change at run time, sorted.
func runtimeSettingNames() []string { return slices.Sorted(maps.Keys(runtimeSettingsByName)) }

// runtimeSettings are a node's run-time settings: its configuration's,
// overridden by those the group set.
type runtimeSettings struct {
	meta *meta.State
	base settingValues
	cur  atomic.Pointer[settingValues]
}

func newRuntimeSettings(cfg *Config, m *meta.State) *runtimeSettings {
	return &runtimeSettings{meta: m, base: settingValues{autoCreateTopic: cfg.AutoCreateTopic,
		defaultQueueNums: cfg.DefaultQueueNums, longPolling: cfg.LongPollingEnabled,
		txnTimeout: cfg.TransactionTimeout, txnCheckInterval: cfg.TransactionCheckInterval,
		txnCheckMax: int32(cfg.TransactionCheckMax), slaveRead: cfg.SlaveReadEnable,
		memRatio: cfg.AccessMessageInMemoryMaxRatio, memBytes: cfg.AccessMessageInMemoryMaxBytes}}
}

// get returns the settings in effect.
func (r *runtimeSettings) get() *settingValues {
	if v := r.cur.Load(); v != nil && v.gen == r.meta.SettingsGen() {
		return v
	}
	set, gen := r.meta.Settings()
	v := r.base
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if parse, ok := runtimeSettingsByName[k]; ok {
			_ = parse(set[k], &v) // checked before it was proposed
		}
	}
	v.gen = gen
	r.cur.Store(&v)
	return &v
}

// check validates settings an update names, each by its name.
func checkRuntimeSettings(set map[string]string) error {
	var scratch settingValues
	for _, k := range slices.Sorted(maps.Keys(set)) {
		parse, ok := runtimeSettingsByName[k]
		if !ok {
			return fmt.Errorf("the broker config %s cannot change at run time (those that can: brokerPermission, %s); nothing was changed",
				k, strings.Join(runtimeSettingNames(), ", "))
		}
		if err := parse(set[k], &scratch); err != nil {
			return fmt.Errorf("%s=%q: %v; nothing was changed", k, set[k], err)
		}
	}
	return nil
}
