//go:build !linux

package broker

// systemMemory is the machine's RAM in bytes; unknown (0) off Linux, where
// only the byte threshold (accessMessageInMemoryMaxBytes) applies.
func systemMemory() int64 { return 0 }
