package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/cueop/cueop/engine/render"
)

// ownedLive lists from the API server the objects in namespace ns that the
// CR of uid controls (its controller owner reference), across every
// allowed kind and every data kind the API server serves
// (reconcile.OwnedFunc). Each list is metadata only and has no label
// selector: a child whose cueop labels lag (sharding just turned on, a CR
// that never re-applied) or were rewritten by another tool, a child of a
// kind not watched, a child the shard's cache does not select, all are
// found. A finalizer comes off on this answer, never on the cache's: a
// kind is left out only when the API server says it does not serve it;
// any other failure to resolve or list one is an error, and the finalizer
// stays. A list answered 404 asks discovery again (childKinds.fresh: the REST
// mapper keeps the mapping of a CRD since deleted): a kind it no longer
// finds is not served, one served at another version is listed there.
// The data kinds are listed even when no longer allowed (the allowed
// kinds narrowed since a claim was created): a retained claim is
// released, never left to the garbage collector. The lists are made as
// b's identity: a list it may not make is an error (Forbidden), never an
// absence; a kind the identity may neither list nor write is left out
// (cannotHaveWritten), unless every kind is (its role or binding missing)
// or it watches children of the kind (it wrote some, this process).
func (b *bundle) ownedLive(ctx context.Context, ns string, uid types.UID) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	var skipped error            // the first refusal cannotHaveWritten left out
	var left []*meta.RESTMapping // the kinds it left out
	listed := false
	for _, gk := range b.ids.kinds.owned() {
		m, items, err := b.listServed(ctx, gk, ns)
		if m == nil && err == nil {
			continue // not served
		}
		if m == nil {
			return nil, err
		}
		if b.cannotHaveWritten(ctx, m.Resource.GroupResource(), ns, err) { // ownedrefused.go
			if b.watches(gk) {
				// It watches children of the kind: it wrote some, and a
				// role narrowed since is a refusal, not an absence.
				return nil, fmt.Errorf("list %s%s: %w", m.Resource.GroupResource(), b.as(), err)
			}
			if skipped == nil {
				skipped = fmt.Errorf("list %s%s: %w", m.Resource.GroupResource(), b.as(), err)
			}
			left = append(left, m)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s%s: %w", m.Resource.GroupResource(), b.as(), err)
		}
		listed = true
		out = appendControlled(out, items, uid, m.GroupVersionKind)
	}
	if !listed && skipped != nil {
		// Not one kind listed: the identity's role or binding is
		// missing (an upgrade that deleted it, a ServiceAccount renamed),
		// not a role that lists other kinds than these. Its children
		// are unknown: a refusal, never an absence, or a retained child
		// would go to the garbage collector with its CR's finalizer.
		return nil, skipped
	}
	// A role or binding granted back while the kinds were listed: a kind
	// refused before a later one was listed is asked again, so that a
	// child it then lists is not taken for absent.
	for _, m := range left {
		items, err := listMetadata(ctx, b.meta, m.Resource, ns)
		if apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s%s: %w", m.Resource.GroupResource(), b.as(), err)
		}
		out = appendControlled(out, items, uid, m.GroupVersionKind)
	}
	return out, nil
}

// listServed lists, as b's identity, the metadata of the objects of kind
// gk in ns at the version the API server serves: a 404 asks discovery
// again (the mapping may be stale, ownedfresh.go). A kind not served is
// (nil, nil, nil); a kind that could not be resolved is (nil, nil, err); a
// list that failed is (m, nil, err).
func (b *bundle) listServed(ctx context.Context, gk schema.GroupKind, ns string) (*meta.RESTMapping, []metav1.PartialObjectMetadata, error) {
	m, err := b.ids.kinds.resolveOwned(gk)
	if notServed(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	items, err := listMetadata(ctx, b.meta, m.Resource, ns)
	if !apierrors.IsNotFound(err) {
		return m, items, err
	}
	fresh, ferr := b.ids.kinds.fresh(gk)
	if meta.IsNoMatchError(ferr) {
		return nil, nil, nil
	}
	if ferr != nil {
		return nil, nil, fmt.Errorf("list %s: %w; %w", m.Resource.GroupResource(), err, ferr)
	}
	items, err = listMetadata(ctx, b.meta, fresh.Resource, ns)
	return fresh, items, err
}

// appendControlled appends to out, as children of kind gvk, the items
// the CR of uid controls.
func appendControlled(out []*unstructured.Unstructured, items []metav1.PartialObjectMetadata, uid types.UID, gvk schema.GroupVersionKind) []*unstructured.Unstructured {
	for i := range items {
		if controlledByUID(&items[i], uid) {
			out = append(out, childMetadata(&items[i], gvk))
		}
	}
	return out
}

// owned are the allowed kinds and the data kinds, sorted.
func (c *childKinds) owned() []schema.GroupKind {
	gks := c.allowedSorted()
	data := c.data
	if data == nil {
		data = render.MustKindSet(render.DefaultDataKinds)
	}
	for gk := range data {
		if !c.allowed[gk] {
			gks = append(gks, gk)
		}
	}
	sort.Slice(gks, func(i, j int) bool { return gks[i].String() < gks[j].String() })
	return gks
}

// resolveOwned resolves gk, allowed or a data kind, to the resource the
// API server serves it as, at its preferred version.
func (c *childKinds) resolveOwned(gk schema.GroupKind) (*meta.RESTMapping, error) {
	if c.allowed[gk] {
		return c.resolve(gk, "")
	}
	m, err := c.mapper.RESTMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("kind %s: %w", gk, err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, fmt.Errorf("data kind %s is cluster-scoped; children live in their parent's namespace", gk)
	}
	return m, nil
}

// notServed tells the answer of a REST mapper that found, in the API
// server's discovery, no such kind: not a discovery that failed (the API
// server unreachable, a group whose resources could not be read), where
// objects of the kind may well exist.
func notServed(err error) bool {
	var failed *apiutil.ErrResourceDiscoveryFailed
	return err != nil && meta.IsNoMatchError(err) && !errors.As(err, &failed)
}

// allowedSorted are the allowed kinds, sorted.
func (c *childKinds) allowedSorted() []schema.GroupKind {
	gks := make([]schema.GroupKind, 0, len(c.allowed))
	for gk := range c.allowed {
		gks = append(gks, gk)
	}
	sort.Slice(gks, func(i, j int) bool { return gks[i].String() < gks[j].String() })
	return gks
}

// listPage is the page size of ownedLive's lists.
const listPage = 500

// listMetadata lists with mc the metadata of every object of resource in
// ns (every namespace when ns is empty), page by page.
func listMetadata(ctx context.Context, mc metadata.Interface, resource schema.GroupVersionResource, ns string) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	opts := metav1.ListOptions{Limit: listPage}
	for {
		list, err := mc.Resource(resource).Namespace(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

func controlledByUID(obj *metav1.PartialObjectMetadata, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == uid
}

// childMetadata is obj's metadata as an unstructured object of kind gvk:
// enough to release it, delete it by uid and read its recorded policy and
// wave.
func childMetadata(obj *metav1.PartialObjectMetadata, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	md, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&obj.ObjectMeta)
	if err != nil {
		panic(err) // ObjectMeta always converts
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": md}}
	u.SetGroupVersionKind(gvk)
	return u
}

// watches tells whether b watches children of kind gk: its kinds rendered
// or it found children of gk since the process started.
func (b *bundle) watches(gk schema.GroupKind) bool {
	return slices.ContainsFunc(b.watchedKinds(), func(gvk schema.GroupVersionKind) bool { return gvk.GroupKind() == gk })
}
