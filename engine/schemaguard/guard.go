package schemaguard

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/crdgen"
	"github.com/cueop/cueop/engine/schemacompat"
	"github.com/cueop/cueop/engine/template"
)

// Live returns the CRD named name as the cluster serves it; nil when there
// is none.
func Live(ctx context.Context, r client.Reader, name string) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := r.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", name, err)
	}
	return live, nil
}

// Check compares live (nil: no CRD yet) with next, the CRD of k. It
// returns nil when next changes nothing breaking (a version it stops
// serving that stored CRs still have managedFields entries at is breaking:
// fieldsAt); otherwise the Refusal,
// its changes located in k and counted over the CRs stored, read through r
// in every namespace. Its Stored tells whether the kind has stored CRs:
// without any, the change may be taken.
func Check(ctx context.Context, r client.Reader, k *template.Kind, live *unstructured.Unstructured, next *apiextensionsv1.CustomResourceDefinition) (*schemacompat.Refusal, error) {
	if live == nil {
		return nil, nil
	}
	old := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, old); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: %w", next.Name, err)
	}
	changes := schemacompat.CompareCRDs(old, next)
	breaking := locatedBreaking(k, changes)
	fields, withFields, err := fieldsAt(ctx, r, old, changes) // managedfields.go
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: count managedFields of stored CRs: %w", next.Name, err)
	}
	if len(breaking) == 0 && len(fields) == 0 {
		return nil, nil
	}
	total, err := countStored(ctx, r, old, breaking)
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s: count stored CRs: %w", next.Name, err)
	}
	if len(fields) > 0 {
		total = max(total, withFields)
	}
	return &schemacompat.Refusal{Kind: k.Resource.ID(), Changes: append(breaking, fields...), Stored: total}, nil
}

// locatedBreaking are the breaking changes among changes, each located
// in k (crdgen.Locate): the one comparison the operator's check and the
// offline one (CheckCommitted) share.
func locatedBreaking(k *template.Kind, changes []schemacompat.Change) []schemacompat.Change {
	breaking := schemacompat.Breaking(changes)
	crdgen.Locate(k, breaking)
	return breaking
}

// countStored lists, at each version a change is to, the CRs of crd's
// kind in every namespace, as the API server serves them at that version,
// a page at a time, counts them into cs (schemacompat.Tally) and returns
// the number of stored CRs: a page is held at once, not every CR.
func countStored(ctx context.Context, r client.Reader, crd *apiextensionsv1.CustomResourceDefinition, cs []schemacompat.Change) (int, error) {
	schemacompat.Count(cs, nil)
	total := 0
	done := map[string]bool{}
	for _, c := range cs {
		if done[c.Version] {
			continue
		}
		done[c.Version] = true
		n := 0
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(crd.Spec.Group + "/" + c.Version)
		list.SetKind(crd.Spec.Names.ListKind)
		for {
			if err := r.List(ctx, list, client.Limit(500), client.Continue(list.GetContinue())); err != nil {
				return 0, err
			}
			page := make([]map[string]any, len(list.Items))
			for i := range list.Items {
				page[i] = list.Items[i].Object
			}
			schemacompat.Tally(cs, c.Version, page)
			n += len(page)
			if list.GetContinue() == "" {
				break
			}
		}
		total = max(total, n)
	}
	return total, nil
}
