package main

import (
	"errors"
	"fmt"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cueop/cueop/engine/render"
	"github.com/cueop/cueop/engine/template"
)

// vetReferences checks, without any CR, every reference whose apiVersion
// and kind a template writes as literals against the readable kinds: a kind
// the operator would refuse is an error even when no golden case renders
// it. References computed from the spec are checked by the golden cases.
func vetReferences(set *template.Set, readable render.KindSet) error {
	var errs []error
	for _, k := range set.Kinds {
		if !k.References {
			continue
		}
		iter, err := k.Value.LookupPath(template.PathReferences).Fields()
		if err != nil {
			continue // a references struct computed from the spec
		}
		for iter.Next() {
			if err := vetReference(iter.Selector().Unquoted(), iter.Value(), readable); err != nil {
				errs = append(errs, fmt.Errorf("kind %s: %w", k.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

func vetReference(id string, v cue.Value, readable render.KindSet) error {
	kind, err := v.LookupPath(cue.ParsePath("kind")).String()
	if err != nil {
		return nil // computed from the spec
	}
	apiVersion, err := v.LookupPath(cue.ParsePath("apiVersion")).String()
	if err != nil {
		return nil
	}
	gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
	if readable[gk] {
		return nil
	}
	pos := "template"
	if p := v.LookupPath(cue.ParsePath("kind")).Pos(); p.IsValid() {
		pos = template.ShortPos(p)
	}
	return fmt.Errorf("%s: references.%s: kind %s is not in the readable kinds (%s): the operator would refuse it; allow it with --readable-kinds",
		pos, id, gk, readable)
}
