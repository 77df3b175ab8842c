package shard

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/sharding"
)

func TestRangeSelectors(t *testing.T) {
	want := []string{
		"shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')",
		"shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')",
		"shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')",
		"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
	}
	for i, r := range Ranges(4) {
		if got := r.Selector(); got != want[i] {
			t.Errorf("range %d: %s, want %s", i, got, want[i])
		}
	}
	if got := Ranges(1)[0].Selector(); got != "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')" {
		t.Errorf("one range: %s", got)
	}
	if got := Ranges(3)[1].LeaseName(); got != "cueop-shard-1-of-3" {
		t.Errorf("lease name %s", got)
	}
}

// Contains agrees with the hash the API server computes
// (k8s.io/apimachinery/pkg/sharding), and every uid is in exactly one range.
func TestRangeContains(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 7} {
		counts := make([]int, n)
		for i := range 2000 {
			uid := fmt.Sprintf("6f1c2d3e-%04x-4b5c-8d9e-%012x", i, i*7919)
			in := 0
			for _, r := range Ranges(n) {
				if r.Contains(uid) {
					in++
					counts[r.Index]++
					start, end, top := r.bounds()
					h := "0x" + sharding.HashField(uid)
					if sharding.HexLess(h, hex(start, false)) || !sharding.HexLess(h, hex(end, top)) {
						t.Fatalf("%s: %s in %s by Contains, not by the API server's comparison", uid, h, r.Selector())
					}
				}
			}
			if in != 1 {
				t.Fatalf("%s is in %d of %d ranges", uid, in, n)
			}
		}
		for i, c := range counts {
			if c < 2000/n/2 {
				t.Errorf("%d ranges: range %d holds %d of 2000 uids", n, i, c)
			}
		}
	}
}
