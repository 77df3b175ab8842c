package apply

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memoMax bounds the memo; when full it starts again empty. An entry is
// three short strings, so a full memo holds a few MiB.
const memoMax = 1 << 16

// memo remembers the (desired hash, live uid, live resourceVersion) triples
// that fieldsDiffer found in sync. A resourceVersion names one state of an
// object, and the hash fixes the desired fields, so the verdict holds for as
// long as neither changes: a resync of unchanged children then costs a hash
// and a lookup instead of two field sets. This treats live objects as the
// informer cache hands them out: snapshots never modified in place.
type memo struct {
	mu   sync.Mutex
	seen map[memoKey]struct{}
}

type memoKey struct{ hash, uid, resourceVersion string }

func keyOf(hash string, live *unstructured.Unstructured) (memoKey, bool) {
	k := memoKey{hash: hash, uid: string(live.GetUID()), resourceVersion: live.GetResourceVersion()}
	return k, k.uid != "" && k.resourceVersion != ""
}

func (m *memo) has(k memoKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.seen[k]
	return ok
}

func (m *memo) add(k memoKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil || len(m.seen) >= memoMax {
		m.seen = make(map[memoKey]struct{})
	}
	m.seen[k] = struct{}{}
}
