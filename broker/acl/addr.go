package acl

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// addrPattern matches remote IP addresses, as RocketMQ's remote address
// strategies: "*" (or "*.*.*.*") any address; an exact IPv4 or IPv6
// address; IPv4 with "*" or "a-b" segments ("192.168.*.*",
// "10.1.1.1-100"); a last segment listing values ("192.168.0.{1,2,3}");
// a CIDR prefix ("10.0.0.0/8", a raftmq extension). "" matches nothing.
type addrPattern struct {
	src    string
	any    bool
	exact  netip.Addr
	prefix netip.Prefix
	segs   []segment // IPv4 with wildcards, ranges or a list
}

// segment is one IPv4 octet pattern: lo ≤ v ≤ hi, or one of set.
type segment struct {
	lo, hi uint8
	set    map[uint8]bool
}

func (s segment) match(v uint8) bool {
	if s.set != nil {
		return s.set[v]
	}
	return s.lo <= v && v <= s.hi
}

// parseAddrPattern parses one pattern.
func parseAddrPattern(p string) (addrPattern, error) {
	p = strings.TrimSpace(p)
	ap := addrPattern{src: p}
	switch {
	case p == "":
		return ap, nil
	case p == "*" || p == "*.*.*.*":
		ap.any = true
		return ap, nil
	case strings.Contains(p, "/"):
		pf, err := netip.ParsePrefix(p)
		if err != nil {
			return ap, fmt.Errorf("acl: address pattern %q: %v", p, err)
		}
		ap.prefix = pf.Masked()
		return ap, nil
	}
	if a, err := netip.ParseAddr(p); err == nil {
		ap.exact = a.Unmap()
		return ap, nil
	}
	parts := strings.Split(p, ".")
	if len(parts) != 4 {
		return ap, fmt.Errorf("acl: address pattern %q is not an address, *, a.b.*.*, a.b.c.d-e or a.b.c.{d,e}", p)
	}
	for i, part := range parts {
		s, err := parseSegment(part, i == 3)
		if err != nil {
			return ap, fmt.Errorf("acl: address pattern %q: %v", p, err)
		}
		ap.segs = append(ap.segs, s)
	}
	return ap, nil
}

func parseSegment(s string, last bool) (segment, error) {
	if s == "*" {
		return segment{lo: 0, hi: 255}, nil
	}
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		if !last {
			return segment{}, fmt.Errorf("a {list} is only allowed in the last segment")
		}
		set := map[uint8]bool{}
		for _, v := range strings.Split(s[1:len(s)-1], ",") {
			n, err := octet(v)
			if err != nil {
				return segment{}, err
			}
			set[n] = true
		}
		return segment{set: set}, nil
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		l, err := octet(lo)
		if err != nil {
			return segment{}, err
		}
		h, err := octet(hi)
		if err != nil {
			return segment{}, err
		}
		if l > h {
			return segment{}, fmt.Errorf("range %s is empty", s)
		}
		return segment{lo: l, hi: h}, nil
	}
	n, err := octet(s)
	return segment{lo: n, hi: n}, err
}

func octet(s string) (uint8, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 8)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number 0-255", s)
	}
	return uint8(n), nil
}

// match reports whether ip matches.
func (p addrPattern) match(ip netip.Addr) bool {
	ip = ip.Unmap()
	switch {
	case p.any:
		return ip.IsValid()
	case p.exact.IsValid():
		return p.exact == ip
	case p.prefix.IsValid():
		return p.prefix.Contains(ip)
	case p.segs != nil:
		if !ip.Is4() {
			return false
		}
		b := ip.As4()
		for i, s := range p.segs {
			if !s.match(b[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// addrPatterns is a list: one match is enough.
type addrPatterns []addrPattern

func parseAddrPatterns(list []string) (addrPatterns, error) {
	var out addrPatterns
	for _, s := range list {
		p, err := parseAddrPattern(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (ps addrPatterns) match(ip netip.Addr) bool {
	for _, p := range ps {
		if p.match(ip) {
			return true
		}
	}
	return false
}
