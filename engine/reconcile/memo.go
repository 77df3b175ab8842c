package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/cueop/cueop/engine/render"
)

// The render memo keeps, per CR (crRecord.memo), the digest of its last
// successful render's inputs and that render's result, packed
// (render.Packed; its size is in docs/benchmarks.md). A reconcile whose
// inputs have the same digest (same template revision, same parent fields, same observed paths
// the template reads) reuses the result and runs no CUE evaluation: a
// resync, a status write coming back, or a child event about a field the
// template does not read costs a digest instead of a render.
//
// Memory is bounded by the number of live CRs: an entry is replaced by
// each render of its CR, dropped when the CR is deleted (forget) or its
// render fails.

// memoEntry is a CR's last render.
type memoEntry struct {
	digest render.Digest
	packed *render.Packed
}

// render returns the result of rendering in for the CR key: the previous
// one when the digest of in is unchanged (hit), else a fresh render. load,
// when not nil, completes in before a render (the referenced objects read
// whole: references.go); its error is returned as is, with no render.
func (m *crs) render(ctx context.Context, ev render.Evaluator, key types.NamespacedName, in render.Inputs, opts render.Options, load func(render.Inputs) (render.Inputs, error)) (res *render.Result, hit bool, err error) {
	d, ok := in.Digest()
	if ok {
		var e *memoEntry
		m.read(key, func(c *crRecord) { e = c.memo })
		if e != nil && e.digest == d {
			m.mu.Lock()
			m.hits++
			m.mu.Unlock()
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
		m.update(key, func(c *crRecord) { c.memo = nil })
		return res, false, err
	}
	m.update(key, func(c *crRecord) { c.memo = &memoEntry{digest: d, packed: p} })
	return res, false, nil
}

// size is the number of entries and about how many bytes they hold.
func (m *crs) size() (entries, bytes int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.m {
		if c.memo != nil {
			entries++
			bytes += c.memo.packed.Size() + len(c.memo.digest) + 64
		}
	}
	return entries, bytes
}

// MemoStats reports the render memo: reuses, renders, entries and about
// how many bytes they hold.
func (r *Reconciler) MemoStats() (hits, misses int64, entries, bytes int) {
	entries, bytes = r.crs.size()
	r.crs.mu.Lock()
	defer r.crs.mu.Unlock()
	return r.crs.hits, r.crs.misses, entries, bytes
}
