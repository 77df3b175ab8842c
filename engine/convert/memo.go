package convert

import (
	"encoding/json"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cueop/cueop/engine/template"
)

// specMemo keeps the specs a converter converted, by what a conversion of
// a spec depends on: the two versions, whether it is lenient, the spec and
// the annotation that may carry the target version's spec. A conversion is
// a pure function of those for one compiled template, and the API server
// asks for the same one again and again: while it serves a version beside
// the storage version, it converts every write of a CR (a status write, a
// finalizer) for its watch cache of that version, the spec unchanged.
//
// Two generations bound it: an entry is added to the current one, found in
// either (and moved to the current), and when the current one holds
// memoBytes/2 the previous one is dropped and the current one becomes it.
// A spec or result larger than memoEntryMax is not kept. Errors are not
// kept either, nor a conversion that ended over its budget (Convert keeps
// a result only once its budget passed it): a refused conversion is
// evaluated anew, within its budget.
type specMemo struct {
	mu        sync.Mutex
	cur, prev map[string]memoEntry
	curBytes  int
}

type memoEntry struct {
	spec    map[string]any // the converted spec, a copy of its own
	size    int            // its JSON's length and the carried fields', for the bound
	carried map[string]any // the fields the annotation carries, a copy of its own
}

const (
	memoBytes    = 16 << 20
	memoEntryMax = 16 << 10
)

// memoKey is the key of converting spec from one version to another, with
// the annotation of to's spec ("" and false when absent). A spec holding a
// float is not kept: JSON writes 3.0 as 3, which CUE takes for an int, so
// the key would not tell them apart.
func memoKey(spec map[string]any, from, to *template.Version, lenient bool, annotation string, annotated bool) (string, bool) {
	if hasFloat(spec) {
		return "", false
	}
	b, err := json.Marshal(spec) // map keys sorted: one text per spec
	if err != nil || len(b)+len(annotation) > memoEntryMax {
		return "", false
	}
	return from.Name + "\x00" + to.Name + "\x00" + strconv.FormatBool(lenient) + "\x00" +
		strconv.FormatBool(annotated) + "\x00" + annotation + "\x00" + string(b), true
}

func hasFloat(v any) bool {
	switch v := v.(type) {
	case float64, float32:
		return true
	case map[string]any:
		for _, e := range v {
			if hasFloat(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasFloat(e) {
				return true
			}
		}
	}
	return false
}

// get returns a copy of the result kept for key.
func (m *specMemo) get(key string) (specResult, bool) {
	m.mu.Lock()
	e, ok := m.cur[key]
	if !ok {
		if e, ok = m.prev[key]; ok {
			m.addLocked(key, e)
		}
	}
	m.mu.Unlock()
	if !ok {
		return specResult{}, false
	}
	// A map of its own: the caller may change it.
	res := specResult{spec: runtime.DeepCopyJSON(e.spec)}
	if e.carried != nil {
		res.carried = runtime.DeepCopyJSON(e.carried)
	}
	return res, true
}

// entry is what put keeps of res: a copy taken now, before the caller can
// change res, or false when res is not to be kept.
func entry(res specResult) (e memoEntry, ok bool) {
	defer func() {
		if recover() != nil { // a value DeepCopyJSON does not know: not kept
			ok = false
		}
	}()
	b, err := json.Marshal(res.spec)
	carried, cerr := json.Marshal(res.carried)
	if err != nil || cerr != nil || len(b)+len(carried) > memoEntryMax {
		return memoEntry{}, false
	}
	spec := res.spec
	if spec == nil {
		spec = map[string]any{}
	}
	e = memoEntry{spec: runtime.DeepCopyJSON(spec), size: len(b) + len(carried)}
	if res.carried != nil {
		e.carried = runtime.DeepCopyJSON(res.carried)
	}
	return e, true
}

// put keeps e for key.
func (m *specMemo) put(key string, e memoEntry) {
	m.mu.Lock()
	m.addLocked(key, e)
	m.mu.Unlock()
}

func (m *specMemo) addLocked(key string, e memoEntry) {
	if m.cur == nil {
		m.cur = map[string]memoEntry{}
	}
	if _, ok := m.cur[key]; ok {
		return
	}
	if m.curBytes >= memoBytes/2 {
		m.prev, m.cur, m.curBytes = m.cur, map[string]memoEntry{}, 0
	}
	m.cur[key] = e
	// The JSON's length understates the maps; twice it is about what
	// they take.
	m.curBytes += len(key) + 2*e.size + 64
}
