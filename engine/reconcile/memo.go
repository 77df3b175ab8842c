package reconcile

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/render"
)

// renderMemo keeps, per CR, the digest of its last successful render's
// inputs and that render's result, packed (render.Packed; its size is in
// docs/benchmarks.md). A reconcile whose inputs have the same
// digest (same template revision, same parent fields, same observed paths
// the template reads) reuses the result and runs no CUE evaluation: a
// resync, a status write coming back, or a child event about a field the
// template does not read costs a digest instead of a render.
//
// Memory is bounded by the number of live CRs: an entry is replaced by
// each render of its CR, dropped when the CR is deleted (Forget) or its
// render fails.
type renderMemo struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]memoEntry
	// hits and misses count reuses and renders, for tests and metrics.
	hits, misses int64
}

type memoEntry struct {
	digest render.Digest
	packed *render.Packed
}

// render returns the result of rendering in for the CR key: the previous
// one when the digest of in is unchanged (hit), else a fresh render. load,
// when not nil, completes in before a render (the referenced objects read
// whole: references.go); its error is returned as is, with no render.
func (m *renderMemo) render(ctx context.Context, ev render.Evaluator, key types.NamespacedName, in render.Inputs, opts render.Options, load func(render.Inputs) (render.Inputs, error)) (res *render.Result, hit bool, err error) {
	d, ok := in.Digest()
	if ok {
		m.mu.Lock()
		e, found := m.entries[key]
		if found && e.digest == d {
			m.hits++
		}
		m.mu.Unlock()
		if found && e.digest == d {
			return render.Reuse(in, e.packed.Unpack()), true, nil
		}
	}
	if load != nil {
		if in, err = load(in); err != nil {
			return nil, false, err
		}
		d, ok = in.Digest() // the objects read may be newer than their metadata
	}
	res, p, err := render.RenderPacked(ctx, ev, in, opts) // as a worker sent it
	m.mu.Lock()
	defer m.mu.Unlock()
	m.misses++
	if err != nil || !ok || p == nil {
		delete(m.entries, key)
		return res, false, err
	}
	if m.entries == nil {
		m.entries = map[types.NamespacedName]memoEntry{}
	}
	m.entries[key] = memoEntry{digest: d, packed: p}
	return res, false, nil
}

// forget drops the entry of a CR that is gone.
func (m *renderMemo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
}

// size is the number of entries and about how many bytes they hold.
func (m *renderMemo) size() (entries, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		bytes += e.packed.Size() + len(e.digest) + 64
	}
	return len(m.entries), bytes
}

// MemoStats reports the render memo: reuses, renders, entries and about
// how many bytes they hold.
func (r *Reconciler) MemoStats() (hits, misses int64, entries, bytes int) {
	entries, bytes = r.memo.size()
	r.memo.mu.Lock()
	defer r.memo.mu.Unlock()
	return r.memo.hits, r.memo.misses, entries, bytes
}
