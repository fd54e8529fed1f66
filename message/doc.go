// Package message owns raftmq's message model and every binary encoding of
// a message that crosses the wire or reaches the disk: the property string,
// the stored (and pulled) record, the SEND_BATCH_MESSAGE body, zlib body
// compression, offsetMsgId, the client unique key and the tag hash. The
// layouts are Apache RocketMQ 4.x's, byte for byte, so that the official
// clients can read what the broker stores and the broker can copy stored
// records straight into pull responses. It depends on the standard library
// only.
//
// # Stored record (frozen)
//
// Big-endian, no padding. Offsets are for IPv4 hosts; with SYSFLAG bit 0x10
// the born host is 20 bytes (16-byte address, 4-byte port), with 0x20 the
// store host is, and everything after it moves accordingly.
//
//	 0 +---------------------------+
//	   | TOTALSIZE        int32    |  whole record, this field included
//	 4 | MAGICCODE        0xdaa320a7 (v1: 1-byte TOPICLEN)
//	 8 | BODYCRC          crc32 IEEE of BODY & 0x7fffffff
//	12 | QUEUEID          int32    |
//	16 | FLAG             int32    |  application flag
//	20 | QUEUEOFFSET      int64    |  index in the consumequeue
//	28 | PHYSICALOFFSET   int64    |  commit offset (logical in raftmq)
//	36 | SYSFLAG          int32    |  SysFlag* bits
//	40 | BORNTIMESTAMP    int64 ms |
//	48 | BORNHOST         4+4 | 16+4
//	56 | STORETIMESTAMP   int64 ms |
//	64 | STOREHOST        4+4 | 16+4
//	72 | RECONSUMETIMES   int32    |
//	76 | PREPAREDTXOFFSET int64    |
//	84 | BODYLEN int32 | BODY      |  zlib stream if SYSFLAG&1
//	   | TOPICLEN int8 | TOPIC     |  1..127 bytes
//	   | PROPLEN int16 | PROPS     |  0..32767 bytes
//	   +---------------------------+
//
// # Properties (frozen)
//
//	key 0x01 value 0x02 key 0x01 value 0x02 ...
//
// Keys and values may not contain 0x01 or 0x02; EncodeProperties sorts keys
// so equal maps encode equally on every replica.
//
// # Batch body of SEND_BATCH_MESSAGE (frozen)
//
// Concatenated inner messages; topic and queue come from the request header.
//
//	TOTALSIZE int32 | MAGIC int32 (0) | BODYCRC int32 (0) | FLAG int32 |
//	BODYLEN int32 | BODY | PROPLEN int16 | PROPS
//
// # Identifiers (frozen)
//
//	offsetMsgId  hex(storeIP 4|16 · port int32 · commit offset int64)   32|56 chars
//	UNIQ_KEY     hex(clientIP 4|16 · pid int16 · loader int32 ·
//	                 ms since start of month int32 · counter int16)     32|56 chars
//
// Both are written in uppercase and parsed in either case.
package message
