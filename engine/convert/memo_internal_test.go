package convert

import (
	"strings"
	"testing"

	"github.com/cueop/cueop/engine/template"
)

// TestMemoBounded: the memo holds at most two generations of memoBytes/2,
// keeps no spec larger than memoEntryMax, and still finds a recent entry.
func TestMemoBounded(t *testing.T) {
	m := &specMemo{}
	v1, v2 := &template.Version{Name: "v1"}, &template.Version{Name: "v2"}
	var last string
	for i := 0; i < 200_000; i++ {
		spec := map[string]any{"replicas": int64(i), "pad": strings.Repeat("x", 100)}
		key, ok := memoKey(spec, v1, v2, false, "", false)
		if !ok {
			t.Fatalf("spec %d not kept", i)
		}
		e, ok := entry(specResult{spec: spec})
		if !ok {
			t.Fatalf("spec %d: no entry", i)
		}
		m.put(key, e)
		last = key
	}
	held := 0
	for _, g := range []map[string]memoEntry{m.cur, m.prev} {
		for k, e := range g {
			held += len(k) + 2*e.size + 64
		}
	}
	if held > memoBytes+2*(memoEntryMax+64) {
		t.Errorf("memo holds %d bytes, bound %d", held, memoBytes)
	}
	if _, ok := m.get(last); !ok {
		t.Error("the last entry is not found")
	}
	huge := map[string]any{"pad": strings.Repeat("x", memoEntryMax)}
	if _, ok := memoKey(huge, v1, v2, false, "", false); ok {
		t.Error("a spec larger than memoEntryMax is kept")
	}
	if _, ok := memoKey(map[string]any{}, v1, v2, false, strings.Repeat("x", memoEntryMax+1), true); ok {
		t.Error("an annotation larger than memoEntryMax is kept")
	}
}
