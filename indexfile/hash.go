package indexfile

import "unicode/utf16"

// Key returns the index key of a message key in topic, as RocketMQ builds
// it: topic#key.
func Key(topic, key string) string { return topic + "#" + key }

// javaHashCode is Java's String.hashCode of s: s is UTF-8 here, Java hashes
// the UTF-16 code units, so characters outside the BMP count as two.
func javaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return h
}

// keyHash is RocketMQ's indexKeyHashMethod: abs of the hash code, with
// Integer.MIN_VALUE (whose abs is itself) mapped to 0.
func keyHash(key string) int32 {
	h := javaHashCode(key)
	if h < 0 {
		h = -h
	}
	if h < 0 {
		h = 0
	}
	return h
}
