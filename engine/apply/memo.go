package apply

import (
	"crypto/sha256"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memoMax bounds the memo; when full it starts again empty. An entry is
// a few short strings, so a full memo holds a few MiB.
const memoMax = 1 << 16

// memo remembers the desired states fieldsDiffer found in sync with a
// live object. The hash fixes the desired fields. The live side is, for a
// kind of the built-in schema (kschema: the field sets are exact), the
// manager's applied managedFields entry: the verdict compares the fields
// that entry records with the desired ones and reads nothing else of live,
// so it holds while the entry stays as it is, whatever else of the object
// changes (a Pod's status, another manager's labels). For any other kind
// it is live's resourceVersion, which names one state of the whole object.
// A resync, and a reconcile that sees a child whose status moved on, then
// cost a hash and a lookup instead of two field sets. This treats live
// objects as the informer cache hands them out: snapshots never modified
// in place.
type memo struct {
	mu   sync.Mutex
	seen map[memoKey]struct{}
}

// memoKey is a desired hash and the live object's uid with either its
// resourceVersion or the digest of its applied entry (apiVersion and
// fieldsV1).
type memoKey struct{ hash, uid, resourceVersion, entry string }

// keyOf is the memo key of the desired hash against live: by live's
// applied entry of manager when byEntry and that entry's fieldsV1 is JSON
// text (as the cache keeps it), else by live's resourceVersion. ok is
// false when live lacks what the key needs.
func keyOf(hash string, live *unstructured.Unstructured, byEntry bool, manager string) (k memoKey, ok bool) {
	k = memoKey{hash: hash, uid: string(live.GetUID())}
	if byEntry {
		if e := appliedEntry(live, manager); e != nil { // needs.go
			av, _ := e["apiVersion"].(string)
			if fields, isText := e["fieldsV1"].(string); isText {
				k.entry = entryDigest(av, fields)
				return k, k.uid != ""
			}
		}
	}
	k.resourceVersion = live.GetResourceVersion()
	return k, k.uid != "" && k.resourceVersion != ""
}

// entryDigest is the memo's name of an applied entry: its apiVersion and
// its fieldsV1 as JSON text.
func entryDigest(apiVersion, fields string) string {
	sum := sha256.Sum256([]byte(apiVersion + "\x00" + fields))
	return string(sum[:])
}

// answered is what the answer to an apply says of the object it left: its
// uid and resourceVersion, and the applied entry of the manager that sent
// it (fields "" when the answer holds none as text).
type answered struct {
	uid, resourceVersion string
	apiVersion, fields   string
}

// appliedKey is the memo key of the desired hash whose apply was answered
// with ans, for a kind of the built-in schema; ok is false when the answer
// lacks what the key needs. The entry is the API server's record of the
// fields that very apply set, so the hash is in sync with it for as long
// as the entry stays as it is: the next reconcile, seeing the child the
// apply made or changed, decides with a lookup instead of two field sets.
func appliedKey(hash string, ans answered) (memoKey, bool) {
	if ans.uid == "" || ans.fields == "" {
		return memoKey{}, false
	}
	return memoKey{hash: hash, uid: ans.uid, entry: entryDigest(ans.apiVersion, ans.fields)}, true
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
