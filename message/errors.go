package message

import "errors"

// Sentinel errors. Callers test with errors.Is; the package wraps them with
// detail (which field, which length) using %w.
var (
	// ErrTruncated means the input ends before a length field says it should.
	ErrTruncated = errors.New("message: truncated")
	// ErrBadMagic means a stored record does not start with MagicCode.
	ErrBadMagic = errors.New("message: bad magic code")
	// ErrCorrupt means a record's fields are inconsistent with its TOTALSIZE.
	ErrCorrupt = errors.New("message: corrupt record")
	// ErrCRCMismatch means BODYCRC does not match the stored body.
	ErrCRCMismatch = errors.New("message: body crc mismatch")
	// ErrBadTopic means a topic is empty or longer than MaxTopicLen bytes.
	ErrBadTopic = errors.New("message: invalid topic")
	// ErrBadProperty means a property key or value cannot be encoded.
	ErrBadProperty = errors.New("message: invalid property")
	// ErrPropertiesTooLong means encoded properties exceed MaxPropertiesLen.
	ErrPropertiesTooLong = errors.New("message: properties too long")
	// ErrMalformedProperties means encoded properties cannot be parsed.
	ErrMalformedProperties = errors.New("message: malformed properties")
	// ErrBodyTooLarge means a body or record does not fit its length field,
	// or a decompressed body exceeds the caller's limit.
	ErrBodyTooLarge = errors.New("message: body too large")
	// ErrBadHost means a host field is not a valid address and port.
	ErrBadHost = errors.New("message: invalid host")
	// ErrBadMsgID means a string is not a valid offset message id.
	ErrBadMsgID = errors.New("message: invalid message id")
	// ErrBadUniqKey means a string is not a valid client unique key.
	ErrBadUniqKey = errors.New("message: invalid unique key")
	// ErrCompress means zlib compression or decompression failed.
	ErrCompress = errors.New("message: compression failed")
)
