package filter

// RequiredValues reports the values property name must have for the
// expression to be TRUE: ok is true when every matching message has name
// set to one of values (an equality with a string literal or an IN list,
// alone, ANDed with anything, or ORed with others of the same kind). A
// broker uses it to decide a TAGS condition on the consumequeue's tag
// hashes before it reads a message. ok false says nothing.
func (e *Expression) RequiredValues(name string) (values []string, ok bool) {
	set, ok := required(e.root, name)
	if !ok {
		return nil, false
	}
	for v := range set {
		values = append(values, v)
	}
	return values, true
}

// required is RequiredValues of one node, as a set.
func required(n node, name string) (map[string]struct{}, bool) {
	switch n := n.(type) {
	case *eqNode:
		return eqRequired(n, name)
	case *inNode:
		if n.name != name || n.not {
			return nil, false
		}
		set := make(map[string]struct{}, len(n.list)+len(n.set))
		for _, v := range n.list {
			set[v] = struct{}{}
		}
		for v := range n.set {
			set[v] = struct{}{}
		}
		return set, true
	case *andNode:
		// Every conjunct must be TRUE: any one that pins the property
		// pins it; the smallest set is the sharpest.
		var best map[string]struct{}
		for _, x := range n.xs {
			if set, ok := required(x, name); ok && (best == nil || len(set) < len(best)) {
				best = set
			}
		}
		return best, best != nil
	case *orNode:
		// One disjunct must be TRUE: only when each pins the property.
		union := map[string]struct{}{}
		for _, x := range n.xs {
			set, ok := required(x, name)
			if !ok {
				return nil, false
			}
			for v := range set {
				union[v] = struct{}{}
			}
		}
		return union, true
	}
	return nil, false
}

// eqRequired: prop = 'lit' or 'lit' = prop is TRUE only when the property
// is present and equal to the literal.
func eqRequired(n *eqNode, name string) (map[string]struct{}, bool) {
	p, c := n.l, n.r
	if _, isConst := p.(*constNode); isConst {
		p, c = c, p
	}
	prop, ok := p.(*propNode)
	lit, isConst := c.(*constNode)
	if !ok || !isConst || prop.name != name || lit.v.k != kString {
		return nil, false
	}
	return map[string]struct{}{lit.v.s: {}}, true
}
