package convert

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
)

// OwnStatus are the status fields cueop itself writes: a conversion passes
// them unchanged.
var OwnStatus = []string{"conditions", "observedGeneration", "revision", template.StatusInputsDigest, template.StatusImmutable}

// Converter converts objects of one kind between its served versions. It
// is immutable and safe for concurrent use.
type Converter struct {
	kind    *template.Kind
	budget  budget.Budget
	lenient bool
	memo    *specMemo // memo.go; shared by the converters derived from one New

	// bounds (bounds.go) are shared likewise; memoOnly converters
	// evaluate nothing (split.go).
	bounds   *specBounds
	memoOnly bool
}

// New compiles the conversions of k. It returns nil, nil for a kind with
// one version.
func New(k *template.Kind) (*Converter, error) {
	if len(k.Versions) < 2 {
		return nil, nil
	}
	return &Converter{kind: k, memo: &specMemo{}, bounds: &specBounds{}}, nil
}

// WithBudget returns c evaluating each conversion within b (the default
// budget when not called).
func (c *Converter) WithBudget(b budget.Budget) *Converter {
	d := *c
	d.budget = b
	return &d
}

// Lenient returns c converting also a spec that its own version's #Spec
// refuses (a CR stored before a rule or bound existed), as the conversions
// are declared, unchecked, instead of refusing it: what the conversion
// webhook serves, so that such a CR stays readable (and fixable) at every
// version; its render reports the spec.
func (c *Converter) Lenient() *Converter {
	d := *c
	d.lenient = true
	return &d
}

// Versions are the names of the served versions, the hub first.
func (c *Converter) Versions() []string {
	var names []string
	for _, v := range c.kind.Versions {
		names = append(names, v.Name)
	}
	return names
}

// Convert returns obj converted to toVersion of the kind's group. obj is
// not modified. The result's spec is checked against toVersion's #Spec,
// its defaults filled; the annotation rule of lossless round trips
// (wellknown.AnnotationConversionPrefix) is applied. The conversion runs within the
// converter's budget (package budget).
func (c *Converter) Convert(obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	// What the memo answers evaluates no CUE: it needs no budget (a
	// goroutine, a timer and the process's CPU read twice, a third of a
	// memoized conversion's time).
	if out, ok, err := c.Memoized(obj, toVersion); ok { // split.go
		return out, err
	}
	from, err := c.versionOf(obj)
	if err != nil {
		return nil, err
	}
	to := c.kind.Version(toVersion)
	if to == nil {
		return nil, fmt.Errorf("%s: version %q is not served (served: %s)", c.subject(obj), toVersion, strings.Join(c.Versions(), ", "))
	}
	var out *unstructured.Unstructured
	var keep func()
	err = c.budget.Run("convert/"+c.kind.Name, func(*budget.Tracker) error {
		var err error
		out, keep, err = c.convert(obj, from, to)
		return err
	})
	var ex *budget.Exceeded
	if errors.As(err, &ex) {
		return nil, fmt.Errorf("%s: conversion %s to %s: %w", c.subject(obj), from.Name, to.Name, err)
	}
	if err == nil && keep != nil {
		keep() // memo.go: only a conversion its budget passed
	}
	return out, err
}

// versionOf is the served version obj is at.
func (c *Converter) versionOf(obj *unstructured.Unstructured) (*template.Version, error) {
	gv := obj.GetAPIVersion()
	group, version, ok := strings.Cut(gv, "/")
	if !ok || group != c.kind.Resource.Group || obj.GetKind() != c.kind.Resource.Kind {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q is not %s of %s", c.subject(obj), gv, obj.GetKind(), c.kind.Resource.Kind, c.kind.Resource.Group)
	}
	v := c.kind.Version(version)
	if v == nil {
		return nil, fmt.Errorf("%s: version %q is not served (served: %s)", c.subject(obj), version, strings.Join(c.Versions(), ", "))
	}
	return v, nil
}

// subject names obj in errors: Kind ns/name.
func (c *Converter) subject(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return c.kind.Resource.Kind + " " + name
}
