package message

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The functions in this file read or patch single fields of an encoded
// record in place. The broker uses them on records it encoded itself (the
// leader stamps offsets and store time just before proposing), so they
// check only that the field lies inside rec, not the whole record.

func checkLen(rec []byte, end int, field string) error {
	if len(rec) < end {
		return fmt.Errorf("%w: %d bytes, %s ends at %d", ErrTruncated, len(rec), field, end)
	}
	return nil
}

// PatchQueueOffset overwrites QUEUEOFFSET.
func PatchQueueOffset(rec []byte, off int64) error {
	if err := checkLen(rec, offQueueOffset+8, "QUEUEOFFSET"); err != nil {
		return err
	}
	binary.BigEndian.PutUint64(rec[offQueueOffset:], uint64(off))
	return nil
}

// PatchCommitLogOffset overwrites PHYSICALOFFSET.
func PatchCommitLogOffset(rec []byte, off int64) error {
	if err := checkLen(rec, offCommitLogOff+8, "PHYSICALOFFSET"); err != nil {
		return err
	}
	binary.BigEndian.PutUint64(rec[offCommitLogOff:], uint64(off))
	return nil
}

// PatchStoreTimestamp overwrites STORETIMESTAMP, whose position depends on
// the born host's length and so on SYSFLAG.
func PatchStoreTimestamp(rec []byte, ts int64) error {
	l, _, err := recordLayout(rec)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(rec[l.storeTimestamp:], uint64(ts))
	return nil
}

// PatchQueueID overwrites QUEUEID, for messages the broker re-routes (delay
// and retry delivery) without re-encoding them.
func PatchQueueID(rec []byte, queueID int32) error {
	if err := checkLen(rec, offQueueID+4, "QUEUEID"); err != nil {
		return err
	}
	binary.BigEndian.PutUint32(rec[offQueueID:], uint32(queueID))
	return nil
}

// RecordQueueID returns QUEUEID.
func RecordQueueID(rec []byte) (int32, error) {
	if err := checkLen(rec, offQueueID+4, "QUEUEID"); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(rec[offQueueID:])), nil
}

// RecordQueueOffset returns QUEUEOFFSET.
func RecordQueueOffset(rec []byte) (int64, error) {
	if err := checkLen(rec, offQueueOffset+8, "QUEUEOFFSET"); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(rec[offQueueOffset:])), nil
}

// RecordCommitLogOffset returns PHYSICALOFFSET.
func RecordCommitLogOffset(rec []byte) (int64, error) {
	if err := checkLen(rec, offCommitLogOff+8, "PHYSICALOFFSET"); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(rec[offCommitLogOff:])), nil
}

// RecordSysFlag returns SYSFLAG.
func RecordSysFlag(rec []byte) (int32, error) {
	if err := checkLen(rec, offSysFlag+4, "SYSFLAG"); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(rec[offSysFlag:])), nil
}

// RecordStoreTimestamp returns STORETIMESTAMP.
func RecordStoreTimestamp(rec []byte) (int64, error) {
	l, _, err := recordLayout(rec)
	if err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(rec[l.storeTimestamp:])), nil
}

// recordTail returns the topic and property bytes of the record at the
// start of rec, aliasing it.
func recordTail(rec []byte) (topic, props []byte, err error) {
	size, err := PeekTotalSize(rec)
	if err != nil {
		return nil, nil, err
	}
	if size > len(rec) {
		return nil, nil, fmt.Errorf("%w: TOTALSIZE %d, have %d bytes", ErrTruncated, size, len(rec))
	}
	rec = rec[:size]
	l, _, err := recordLayout(rec)
	if err != nil {
		return nil, nil, err
	}
	var m MessageExt
	_, props, err = decodeVariable(rec, l, &m, "")
	if err != nil {
		return nil, nil, err
	}
	// decodeVariable checked that the topic sits just before PROPLEN.
	end := len(rec) - len(props) - 2
	return rec[end-len(m.Topic) : end], props, nil
}

// RecordTopic returns TOPIC of the record at the start of rec.
func RecordTopic(rec []byte) (string, error) {
	topic, _, err := recordTail(rec)
	return string(topic), err
}

// RecordProperty returns the value of one property of the record at the
// start of rec without decoding the others into a map.
func RecordProperty(rec []byte, key string) (string, bool, error) {
	_, props, err := recordTail(rec)
	if err != nil {
		return "", false, err
	}
	v, ok := findProperty(props, key)
	return v, ok, nil
}

// RecordTagsHash returns the consumequeue tags code of rec: TagsHashCode of
// its TAGS property, or 0 when it has none, as the Java broker does.
func RecordTagsHash(rec []byte) (int64, error) {
	tags, ok, err := RecordProperty(rec, PropertyTags)
	if err != nil || !ok {
		return 0, err
	}
	return TagsHashCode(tags), nil
}

// findProperty scans encoded properties for key; the last match wins, as
// in DecodeProperties.
func findProperty(props []byte, key string) (string, bool) {
	var val []byte
	found := false
	for len(props) > 0 {
		item := props
		if i := bytes.IndexByte(props, PropertySeparator); i >= 0 {
			item, props = props[:i], props[i+1:]
		} else {
			props = nil
		}
		if k, v, ok := bytes.Cut(item, []byte{NameValueSeparator}); ok && string(k) == key {
			val, found = v, true
		}
	}
	return string(val), found
}

// EncodedProperties is a record's PROPERTIES bytes, read in place: Get
// finds one property without decoding the others into a map (what a
// filter evaluating a few properties per message wants).
type EncodedProperties []byte

// Get returns a property's value; the last occurrence wins, as in
// DecodeProperties.
func (p EncodedProperties) Get(name string) (string, bool) { return findProperty(p, name) }

// RecordProperties returns the PROPERTIES bytes of the record at the start
// of rec, aliasing it.
func RecordProperties(rec []byte) (EncodedProperties, error) {
	_, props, err := recordTail(rec)
	return props, err
}
