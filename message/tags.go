package message

import "unicode/utf8"

// TagsHashCode returns the tags code RocketMQ stores in consumequeue entries
// and sends in subscription codeSets: Java's String.hashCode of tags,
// computed over UTF-16 code units and sign-extended to int64. Invalid UTF-8
// counts as U+FFFD per bad byte sequence, as Go decodes it; Java's decoder
// may group malformed bytes differently, but clients send valid UTF-8.
func TagsHashCode(tags string) int64 {
	var h int32
	for _, r := range tags {
		if r >= 0x10000 && r <= utf8.MaxRune {
			// A supplementary character is two UTF-16 units in Java.
			r -= 0x10000
			h = 31*h + (0xd800 + r>>10)
			h = 31*h + (0xdc00 + r&0x3ff)
			continue
		}
		h = 31*h + r
	}
	return int64(h)
}
