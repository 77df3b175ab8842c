package schemaguard

import (
	"context"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cueop/cueop/engine/schemacompat"
)

// Dropped are the versions old serves and next does not.
func Dropped(old, next *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range old.Spec.Versions {
		if !v.Served {
			continue
		}
		if i := slices.IndexFunc(next.Spec.Versions, func(n apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return n.Name == v.Name && n.Served
		}); i < 0 {
			out = append(out, v.Name)
		}
	}
	return out
}

// fieldsAt returns, for each version of changes that stops being served
// and that status.storedVersions does not list (one it lists is refused
// already), a breaking change when stored CRs have managedFields entries
// at it, counted from the API server through r: once the version is not
// served, every write of such a CR fails, its status included, as the API
// server cannot convert the CR to the entry's version. It lists the CRs'
// metadata at old's storage version, a page at a time, and returns the
// number of stored CRs.
func fieldsAt(ctx context.Context, r client.Reader, old *apiextensionsv1.CustomResourceDefinition, changes []schemacompat.Change) ([]schemacompat.Change, int, error) {
	var versions []string
	for _, c := range changes {
		if c.What == "version" && c.New == "not served" && !c.Breaking {
			versions = append(versions, c.Version)
		}
	}
	storage := ""
	for _, v := range old.Spec.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if len(versions) == 0 || storage == "" {
		return nil, 0, nil
	}
	at := map[string]int{}
	total := 0
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: old.Spec.Group, Version: storage, Kind: old.Spec.Names.ListKind})
	for {
		if err := r.List(ctx, list, client.Limit(500), client.Continue(list.GetContinue())); err != nil {
			return nil, 0, err
		}
		for _, cr := range list.Items {
			total++
			for _, v := range versions {
				if slices.ContainsFunc(cr.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
					return e.APIVersion == old.Spec.Group+"/"+v
				}) {
					at[v]++
				}
			}
		}
		if list.GetContinue() == "" {
			break
		}
	}
	var out []schemacompat.Change
	for _, v := range versions {
		if at[v] > 0 {
			out = append(out, schemacompat.Change{Version: v, What: schemacompat.WhatManagedFields, Old: "served", New: "not served",
				Breaking: true, Counted: true, Stored: total, Set: at[v]})
		}
	}
	return out, total, nil
}
