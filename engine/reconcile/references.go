// Stage 2, resolve: evaluate the template's references for the CR and read
// the objects they name, in the CR's namespace, from the operator's watched
// caches (by their metadata, read whole only for a render: load); a missing
// one leaves the CR waiting, not rendered. RefIndex maps a changed object
// back to the CRs that read it.
//
// It must not render, nor read an object no reference names.

package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// ReadFunc lists, from a watched cache, the objects of a readable kind in a
// namespace; it starts the watch the first time a kind is read. The
// objects may be metadata only (apiVersion, kind, metadata) when a
// LoadFunc reads them whole.
type ReadFunc func(ctx context.Context, gvk schema.GroupVersionKind, namespace string) ([]*unstructured.Unstructured, error)

// LoadFunc reads whole the object a ReadFunc listed by its metadata (at
// that resourceVersion or a newer one). The object it returns may be
// shared: it is read, never changed.
type LoadFunc func(ctx context.Context, meta *unstructured.Unstructured) (*unstructured.Unstructured, error)

// resolver is stage 2: it evaluates the template's references for a CR
// and reads what they name, from the operator's watched caches.
type resolver struct {
	eval    render.Evaluator
	opts    render.Options
	cluster Cluster   // nil: the template may reference nothing
	refs    *RefIndex // learns what each CR reads; nil: nothing learns it
	bound   int       // the bytes a render's inputs may hold (rendering.go)
}

// load returns in with its referenced objects read whole, when the
// reconciler reads them by metadata (Cluster.Load): only a render needs
// them, as the digest of the inputs counts a referenced object by its
// resourceVersion (render.Inputs.Digest), so a CR whose references did
// not change costs no read.
func (x resolver) load(ctx context.Context) func(render.Inputs) (render.Inputs, error) {
	if x.cluster == nil {
		return nil
	}
	max := x.bound
	return func(in render.Inputs) (render.Inputs, error) {
		whole := make(map[string]render.Referenced, len(in.Referenced))
		read := 0
		for id, ref := range in.Referenced {
			objs := make([]*unstructured.Unstructured, len(ref.Objects))
			for i, o := range ref.Objects {
				got, err := x.cluster.Load(ctx, o)
				if err != nil {
					return in, fmt.Errorf("references.%s: read %s %s/%s: %w", id, o.GetKind(), o.GetNamespace(), o.GetName(), deny("get "+objectText(o), err))
				}
				if read += render.ValueBytes(got.Object); max > 0 && read > max {
					return in, referencedTooLarge(id, o, read, max)
				}
				objs[i] = got
			}
			whole[id] = render.Referenced{Objects: objs, List: ref.List}
		}
		in.Referenced = whole
		return in, nil
	}
}

// referencedTooLarge refuses a render whose referenced objects hold more
// than a render may read (inputBound; a selector matching many large
// objects): the render could not hold them, and reading the rest would
// only cost the operator's memory. The objects' change wakes the CR.
func referencedTooLarge(id string, o *unstructured.Unstructured, read, max int) error {
	return &render.Error{Reason: wellknown.ReasonRenderBudget, Messages: []string{fmt.Sprintf(
		"references.%s: the referenced objects read up to %s %s/%s hold %d bytes, more than the %d a render may read: not rendered (reference fewer or smaller objects)",
		id, o.GetKind(), o.GetNamespace(), o.GetName(), read, max)}}
}

// resolve evaluates the template's references for cr, rendered with k,
// and reads them, in the CR's namespace only: what they resolved to. A
// reference refused by the readable kinds stalls the CR; a missing one
// leaves it waiting, not rendered. The index learns what the CR reads
// either way, so that the object's creation or change wakes it.
func (x resolver) resolve(ctx context.Context, k *template.Kind, cr *unstructured.Unstructured) (map[string]render.Referenced, outcome, error) {
	if !k.References {
		x.refs.Forget(client.ObjectKeyFromObject(cr))
		return nil, outcome{}, nil
	}
	refs, err := x.references(ctx, k, cr)
	var rerr *render.Error
	if errors.As(err, &rerr) {
		return nil, stallOf(rerr.Reason, rerr.Error()), nil
	}
	if err != nil {
		return nil, outcome{}, fmt.Errorf("%s: references: %w", objectText(cr), err)
	}
	if len(refs) == 0 {
		return nil, outcome{}, nil
	}
	if x.cluster == nil {
		return nil, outcome{}, fmt.Errorf("%s: the template references objects and this reconciler reads none", objectText(cr))
	}
	got, missing, err := ReadReferences(ctx, refs, cr.GetNamespace(), x.cluster.Read)
	if err != nil {
		return nil, waitFor("reading references failed, retrying: " + err.Error()), fmt.Errorf("%s: %w", objectText(cr), err)
	}
	return got, outcome{missing: missing}, nil
}

// ReadReferences reads, with read, the objects refs name in namespace, each
// kind (at the version referenced) once, and resolves the references:
// what each resolved to, and the references by name that found no object,
// one line each ("" when none): a reconcile renders nothing, and applies
// nothing, until they exist (wellknown.ReasonReferenceNotFound).
func ReadReferences(ctx context.Context, refs []render.Reference, namespace string, read ReadFunc) (map[string]render.Referenced, string, error) {
	read1 := map[schema.GroupVersionKind][]*unstructured.Unstructured{}
	got := make(map[string]render.Referenced, len(refs))
	var missing []render.Reference
	for _, ref := range refs {
		gvk := ref.GroupVersionKind()
		items, done := read1[gvk]
		if !done {
			var err error
			if items, err = read(ctx, gvk, namespace); err != nil {
				what := fmt.Sprintf("list %s in namespace %s", gvk.Kind, namespace)
				return nil, "", fmt.Errorf("read %s: %w", ref, deny(what, err)) // forbidden.go
			}
			read1[gvk] = items
		}
		// Resolved against the objects read at its own version only: a
		// kind read at two versions lists each object twice.
		one, miss := render.Resolve([]render.Reference{ref}, namespace, items)
		maps.Copy(got, one)
		missing = append(missing, miss...)
	}
	if len(missing) == 0 {
		return got, "", nil
	}
	lines := make([]string, 0, len(missing))
	for _, m := range missing {
		lines = append(lines, fmt.Sprintf("%s not found in namespace %s", m, namespace))
	}
	return got, strings.Join(lines, "; "), nil
}

// references are the CR's references, evaluated again only when what they
// are computed from changed: the template revision and the parent the
// template sees (its spec, by generation, its labels and annotations).
// The index remembers them, so that the object's events find the CR.
func (x resolver) references(ctx context.Context, k *template.Kind, cr *unstructured.Unstructured) ([]render.Reference, error) {
	key := types.NamespacedName{Namespace: cr.GetNamespace(), Name: cr.GetName()}
	memo := referencesKey(k.Revision, cr)
	if refs, ok := x.refs.get(key, memo); ok {
		return refs, nil
	}
	refs, err := x.eval.References(ctx, k, cr, x.opts)
	if err != nil {
		x.refs.Forget(key)
		return nil, err
	}
	x.refs.set(key, memo, refs)
	return refs, nil
}

// referencesKey is what a CR's references are computed from.
func referencesKey(revision string, cr *unstructured.Unstructured) string {
	meta, _ := json.Marshal([]any{cr.GetUID(), cr.GetGeneration(), cr.GetLabels(), cr.GetAnnotations()})
	return revision + "/" + string(meta)
}

// RefIndex maps the objects CRs reference to the CRs, so that a change of a
// referenced object reconciles exactly the CRs that read it. What each CR
// references is kept in its record (reconciler.go): an index the operator makes
// (NewRefIndex) holds records of its own until the reconciler it is handed
// to binds it to its own (Reconciler.Reconcile). It is safe for concurrent
// use.
type RefIndex struct {
	mu  sync.Mutex
	crs *crs
}

// refEntry is what one CR references, and the key of what they were
// computed from (referencesKey); the zero value: nothing known.
type refEntry struct {
	key  string
	refs []render.Reference
}

func (e refEntry) any() bool { return e.key != "" || len(e.refs) > 0 }

// NewRefIndex returns an empty index.
func NewRefIndex() *RefIndex { return &RefIndex{crs: &crs{}} }

// records are the records x indexes.
func (x *RefIndex) records() *crs {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.crs
}

// bind makes x index s, the records of the reconciler it serves, moving
// into them what was set before.
func (x *RefIndex) bind(s *crs) {
	if x == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.crs == s {
		return
	}
	moved := map[types.NamespacedName]refEntry{}
	x.crs.each(func(key types.NamespacedName, c *crRecord) {
		if c.refs.any() {
			moved[key] = c.refs
		}
	})
	for key, e := range moved {
		s.change(key, func(c *crRecord) { c.refs = e })
	}
	x.crs = s
}

// Set records what cr references (nothing forgets it).
func (x *RefIndex) Set(cr types.NamespacedName, refs []render.Reference) { x.set(cr, "", refs) }

func (x *RefIndex) set(cr types.NamespacedName, key string, refs []render.Reference) {
	if x == nil {
		return
	}
	x.records().change(cr, func(c *crRecord) { c.refs = refEntry{key: key, refs: refs} })
}

// get returns what cr references when it was computed from key.
func (x *RefIndex) get(cr types.NamespacedName, key string) ([]render.Reference, bool) {
	if x == nil {
		return nil, false
	}
	var e refEntry
	x.records().read(cr, func(c *crRecord) { e = c.refs })
	if !e.any() || e.key != key {
		return nil, false
	}
	return e.refs, true
}

// Forget drops cr from the index.
func (x *RefIndex) Forget(cr types.NamespacedName) { x.Set(cr, nil) }

// Match returns the CRs that reference o (in o's namespace).
func (x *RefIndex) Match(o *unstructured.Unstructured) []types.NamespacedName {
	if x == nil {
		return nil
	}
	s := x.records()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []types.NamespacedName
	for cr := range s.refNS[o.GetNamespace()] {
		for _, ref := range s.m[cr].refs.refs {
			if ref.Matches(o) {
				out = append(out, cr)
				break
			}
		}
	}
	return out
}
