package worker

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RefuseFor is how long a conversion that ended its worker (crashed it,
// ran out of its budget, overran it) is refused at once, with the same
// error, for the same object: the API server asks again and again (its
// watch cache of a version lists every object anew after a failure), and
// each time would cost a worker and up to 1.5 times the budget.
const RefuseFor = time.Minute

// maxRefusals bounds the conversions refused at once; past it the oldest
// generation is forgotten.
const maxRefusals = 1024

// refusals are the conversions refused for RefuseFor, by refusalKey, in
// two generations.
type refusals struct {
	mu        sync.Mutex
	cur, prev map[[sha256.Size]byte]refusal
}

type refusal struct {
	err   error
	until time.Time
}

// refusalKey is what a conversion of obj to toVersion depends on: its
// version, spec, status and annotations (the lossless round trips' own).
func refusalKey(obj *unstructured.Unstructured, toVersion string) [sha256.Size]byte {
	b, _ := json.Marshal([]any{obj.GetAPIVersion(), toVersion, obj.Object["spec"], obj.Object["status"], obj.GetAnnotations()})
	return sha256.Sum256(b)
}

// get is the refusal of key, or nil.
func (r *refusals) get(key [sha256.Size]byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.cur[key]
	if !ok {
		e, ok = r.prev[key]
	}
	if !ok || time.Now().After(e.until) {
		return nil
	}
	return fmt.Errorf("%w (not evaluated again until %s: the same object ended a worker)", e.err, e.until.UTC().Format(time.TimeOnly))
}

func (r *refusals) put(key [sha256.Size]byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cur) >= maxRefusals/2 {
		r.prev, r.cur = r.cur, nil
	}
	if r.cur == nil {
		r.cur = map[[sha256.Size]byte]refusal{}
	}
	r.cur[key] = refusal{err: err, until: time.Now().Add(RefuseFor)}
}
