package shard

import (
	"fmt"
	"hash/fnv"
	"math/bits"
)

// UIDField is the field the ranges hash.
const UIDField = "object.metadata.uid"

// Range is one of Count equal ranges of the 64-bit hash space of CR uids.
type Range struct {
	Index, Count int
}

// Ranges cuts the hash space into n ranges.
func Ranges(n int) []Range {
	rs := make([]Range, n)
	for i := range rs {
		rs[i] = Range{Index: i, Count: n}
	}
	return rs
}

// bounds are the range's inclusive start and exclusive end; top says the
// end is 2^64 (end is then 0).
func (r Range) bounds() (start, end uint64, top bool) {
	n := uint64(r.Count)
	start, _ = bits.Div64(uint64(r.Index), 0, n) // Index * 2^64 / Count
	if r.Index+1 == r.Count {
		return start, 0, true
	}
	end, _ = bits.Div64(uint64(r.Index+1), 0, n)
	return start, end, false
}

// hex formats a bound the way the API server compares them: 0x and 16
// digits, 2^64 as 0x10000000000000000.
func hex(v uint64, top bool) string {
	if top {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", v)
}

// Selector is the shardSelector of the range's CRs.
func (r Range) Selector() string {
	start, end, top := r.bounds()
	return fmt.Sprintf("shardRange(%s, '%s', '%s')", UIDField, hex(start, false), hex(end, top))
}

// Contains tells whether the CR of uid is in the range, as the API server
// decides it.
func (r Range) Contains(uid string) bool {
	h := fnv.New64a()
	h.Write([]byte(uid))
	v := h.Sum64()
	start, end, top := r.bounds()
	return v >= start && (top || v < end)
}

// Of is the range of n that holds the CR of uid.
func Of(uid string, n int) Range {
	for _, r := range Ranges(n) {
		if r.Contains(uid) {
			return r
		}
	}
	panic("shard: the ranges do not cover the hash space")
}

// Label is the value of wellknown.LabelShard on the children of the range's CRs.
func (r Range) Label() string { return fmt.Sprintf("%d-of-%d", r.Index, r.Count) }

// LeaseName is the name of the range's Lease.
func (r Range) LeaseName() string { return "cueop-shard-" + r.Label() }

func (r Range) String() string { return r.Label() }
