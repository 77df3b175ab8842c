package convert

import (
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/cueop/cueop/engine/template"
	"github.com/cueop/cueop/engine/wellknown"
)

// convert converts obj from one version to another: the spec by the
// conversions and the annotation rule, the status by the conversions
// that declare out.status, the rest unchanged.
func (c *Converter) convert(obj *unstructured.Unstructured, from, to *template.Version) (_ *unstructured.Unstructured, keep func(), _ error) {
	out := obj.DeepCopy()
	out.SetAPIVersion(c.kind.Resource.Group + "/" + to.Name)
	if from == to {
		dropAnnotation(out, to.Name)
		return out, nil, nil
	}
	if err := c.refuseIncomplete(obj, from, to); err != nil { // incomplete.go
		return nil, nil, err
	}
	if from.Hub {
		dropMarkers(out) // incomplete.go
	}
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	res, keep, err := c.convertSpec(obj, spec, from, to)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: conversion %s to %s: %w", c.subject(obj), from.Name, to.Name, err)
	}
	out.Object["spec"] = res.spec
	dropAnnotation(out, to.Name)
	// obj's spec is its version's spec: an annotation of a spec at that
	// version is stale, and restoring it later would change the object.
	dropAnnotation(out, from.Name)
	if res.carried != nil {
		b, err := json.Marshal(res.carried)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: spec at %s: %w", c.subject(obj), from.Name, err)
		}
		setAnnotation(out, from.Name, string(b))
		if err := checkAnnotationSize(out, res.carried, from, to); err != nil { // annotationsize.go
			if tooLarge, ok := err.(*AnnotationTooLargeError); ok && from.Hub {
				if err := c.convertStatus(out, obj, from, to); err != nil {
					return nil, nil, fmt.Errorf("%s: conversion %s to %s: %w", c.subject(obj), from.Name, to.Name, err)
				}
				if partial := incomplete(out, c.subject(obj), from, tooLarge); partial != nil { // incomplete.go
					return nil, nil, partial
				}
			}
			return nil, nil, fmt.Errorf("%s: %w", c.subject(obj), err)
		}
	}
	if err := c.convertStatus(out, obj, from, to); err != nil {
		return nil, nil, fmt.Errorf("%s: conversion %s to %s: %w", c.subject(obj), from.Name, to.Name, err)
	}
	return out, keep, nil
}

// specResult is a converted spec and the fields of the source spec the
// annotation carries: those the result does not convert back to (nil when
// it converts back whole).
type specResult struct {
	spec    map[string]any
	carried map[string]any
}

// convertSpec applies the annotation rule around the conversion of spec:
// the fields of to's spec stored by an earlier conversion are restored
// over the conversion's result exactly when that still converts to spec,
// else fill only what the result lacks.
// A conversion found in the memo is not evaluated; one evaluated comes
// with keep, which keeps it there (called once the budget passed it).
func (c *Converter) convertSpec(obj *unstructured.Unstructured, spec map[string]any, from, to *template.Version) (specResult, func(), error) {
	annotation, annotated := obj.GetAnnotations()[wellknown.AnnotationConversionPrefix+to.Name]
	key, keep := memoKey(spec, from, to, c.lenient, annotation, annotated)
	if keep && c.memo != nil {
		if res, ok := c.memo.get(key); ok {
			return res, nil, nil
		}
	}
	res, err := c.convertSpecOnce(obj, spec, from, to)
	if err != nil || !keep || c.memo == nil {
		return res, nil, err
	}
	e, ok := entry(res)
	if !ok {
		return res, nil, nil
	}
	return res, func() { c.memo.put(key, e) }, nil
}

// convertSpecOnce is convertSpec, evaluated.
func (c *Converter) convertSpecOnce(obj *unstructured.Unstructured, spec map[string]any, from, to *template.Version) (specResult, error) {
	stored, err := c.storedSpecAt(obj, to) // bounds.go
	if err != nil {
		return specResult{}, err
	}
	in, got, err := c.specPath(spec, from, to)
	if err != nil {
		return specResult{}, err
	}
	if stored != nil {
		restored, ok, fault := c.restore(got, stored, in, from, to)
		if ok {
			return specResult{spec: restored}, nil
		}
		if to.Hub {
			// A write at from (the hub is the storage version): storing
			// got with what it lacks filled would drop what only the hub
			// holds, or not store what the writer said (or not be a
			// spec: a struct half filled).
			if err := admits(stored, to); err != nil {
				// An annotation no conversion wrote.
				return specResult{}, fmt.Errorf("restoring annotation %s%s: %w", wellknown.AnnotationConversionPrefix, to.Name, err)
			}
			return specResult{}, c.refuseLossyWrite(got, stored, fault, from, to)
		}
		filled, err := c.normalize(fillMissing(got, stored), to)
		if err != nil {
			return specResult{}, fmt.Errorf("restoring annotation %s%s: %w", wellknown.AnnotationConversionPrefix, to.Name, err)
		}
		got = filled
	}
	_, back, err := c.specPath(got, to, from)
	if err != nil {
		return specResult{}, fmt.Errorf("converting the result back: %w", err)
	}
	return specResult{spec: got, carried: lost(in, back)}, nil
}

// lost is what of spec a round trip's result back does not give again:
// each field back lacks or holds otherwise, recursively into structs; nil
// when none.
func lost(spec, back map[string]any) map[string]any {
	var out map[string]any
	for k, v := range spec {
		b, has := back[k]
		if has && reflect.DeepEqual(v, b) {
			continue
		}
		vm, ok1 := v.(map[string]any)
		bm, ok2 := b.(map[string]any)
		if ok1 && ok2 {
			if l := lost(vm, bm); l != nil {
				v = l
			} else {
				continue // differs only by fields back invents
			}
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}

// overlay returns got with the fields of stored set over it, recursively
// into structs.
func overlay(got, stored map[string]any) map[string]any {
	out := make(map[string]any, len(got))
	for k, v := range got {
		out[k] = v
	}
	for k, s := range stored {
		gm, ok1 := out[k].(map[string]any)
		sm, ok2 := s.(map[string]any)
		if ok1 && ok2 {
			out[k] = overlay(gm, sm)
		} else {
			out[k] = s
		}
	}
	return out
}

// storedSpec is the spec of version stored in obj's annotation, or nil.
func storedSpec(obj *unstructured.Unstructured, version string) (map[string]any, error) {
	s, ok := obj.GetAnnotations()[wellknown.AnnotationConversionPrefix+version]
	if !ok {
		return nil, nil
	}
	var spec map[string]any
	if err := utiljson.Unmarshal([]byte(s), &spec); err != nil {
		return nil, fmt.Errorf("annotation %s%s: %w", wellknown.AnnotationConversionPrefix, version, err)
	}
	if spec == nil {
		spec = map[string]any{}
	}
	return spec, nil
}

// fillMissing returns got with the fields it lacks taken from stored,
// recursively into structs.
func fillMissing(got, stored map[string]any) map[string]any {
	out := make(map[string]any, len(got))
	for k, v := range got {
		out[k] = v
	}
	for k, s := range stored {
		g, has := out[k]
		if !has {
			out[k] = s
			continue
		}
		gm, ok1 := g.(map[string]any)
		sm, ok2 := s.(map[string]any)
		if ok1 && ok2 {
			out[k] = fillMissing(gm, sm)
		}
	}
	return out
}

func dropAnnotation(obj *unstructured.Unstructured, version string) {
	a := obj.GetAnnotations()
	if _, ok := a[wellknown.AnnotationConversionPrefix+version]; !ok {
		return
	}
	delete(a, wellknown.AnnotationConversionPrefix+version)
	if len(a) == 0 {
		a = nil
	}
	obj.SetAnnotations(a)
}

func setAnnotation(obj *unstructured.Unstructured, version, value string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[wellknown.AnnotationConversionPrefix+version] = value
	obj.SetAnnotations(a)
}
