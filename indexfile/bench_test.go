package indexfile

import (
	"fmt"
	"testing"
)

// benchStore is a store of RocketMQ's geometry on the OS file system.
func benchStore(b *testing.B) *Store {
	cfg := DefaultConfig()
	cfg.Dir = b.TempDir()
	s, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkPut(b *testing.B) {
	s := benchStore(b)
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = Key("BenchTopic", fmt.Sprint("order-", i))
	}
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		if err := s.Put(keys[i%int64(len(keys))], i*200, t0+i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkQuery looks up a key holding 10 entries among 100,000.
func BenchmarkQuery(b *testing.B) {
	s := benchStore(b)
	const keys, n = 10_000, 100_000
	for i := int64(0); i < n; i++ {
		if err := s.Put(Key("BenchTopic", fmt.Sprint("order-", i%keys)), i*200, t0+i); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, keys)
	for i := range names {
		names[i] = Key("BenchTopic", fmt.Sprint("order-", i))
	}
	b.ReportAllocs()
	var i int
	for b.Loop() {
		got, err := s.Query(names[i%keys], t0, t0+n, 32)
		if err != nil || len(got) != 10 {
			b.Fatal(err, len(got))
		}
		i++
	}
}
