package convert

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cueop/cueop/engine/budget"
	"github.com/cueop/cueop/engine/template"
)

// ErrInvalidInput is a round trip of a spec its own version's #Spec
// refuses: it proves nothing.
var ErrInvalidInput = errors.New("spec refused by its own version")

// CheckRoundTrip converts spec, at version from, to version via and back,
// without the annotation, and refuses the conversions when the spec does
// not come back as it was in a way the annotation may not carry: a field
// the round trip invents, or a field it loses or changes that went to via
// (the conversion to via reads it) or that via has too (a field of the
// same path in via's #Spec). The error names the field and the CUE
// position of the conversion at fault. A spec from's #Spec refuses is
// ErrInvalidInput. Every conversion runs within the converter's budget
// (a *budget.Exceeded, wrapped, when one runs out): the operator checks
// its tenants' stored specs. Then the whole object goes from and back with the
// annotation rule, and must come back unchanged.
func (c *Converter) CheckRoundTrip(spec map[string]any, from, via string) error {
	a, b := c.kind.Version(from), c.kind.Version(via)
	if a == nil || b == nil || a.Hub == b.Hub {
		return fmt.Errorf("round trip %s to %s: one of them must be the hub, the other a spoke", from, via)
	}
	var in, back map[string]any
	err := c.budget.Run("convert/"+c.kind.Name, func(*budget.Tracker) error {
		i, mid, err := c.specPath(spec, a, b)
		if err != nil {
			if errors.Is(err, errInput) {
				return ErrInvalidInput
			}
			return fmt.Errorf("conversion %s to %s: %w", from, via, err)
		}
		_, bk, err := c.specPath(mid, b, a)
		if err != nil {
			return fmt.Errorf("conversion %s to %s of %v: %w", via, from, mid, err)
		}
		in, back = i, bk
		return nil
	})
	var ex *budget.Exceeded
	if errors.As(err, &ex) {
		return fmt.Errorf("round trip %s to %s and back: %w", from, via, err)
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range diff("spec", in, back) {
		errs = append(errs, c.judge(d, a, b))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.checkObjectRoundTrip(spec, a, b)
}

// checkObjectRoundTrip converts an object with spec from a to b and back
// with Convert, annotation included: it must come back as it was.
func (c *Converter) checkObjectRoundTrip(spec map[string]any, a, b *template.Version) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": c.kind.Resource.Group + "/" + a.Name, "kind": c.kind.Resource.Kind,
		"metadata": map[string]any{"name": "round-trip"}, "spec": spec}}
	in, err := c.Convert(obj, a.Name) // as a's #Spec makes it
	if err != nil {
		return err
	}
	in.Object["spec"], _ = c.normalize(spec, a)
	mid, err := c.Convert(in, b.Name)
	if err != nil {
		return err
	}
	back, err := c.Convert(mid, a.Name)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(back.Object, in.Object) {
		return fmt.Errorf("round trip %s to %s and back with the annotation: got %v, want %v", a.Name, b.Name, back.Object, in.Object)
	}
	return nil
}

// difference is one field where a round trip differs: lost (only in the
// original), invented (only in the result) or changed.
type difference struct {
	path, what string
}

func diff(path string, want, got map[string]any) []difference {
	var out []difference
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		w, hw := want[k]
		g, hg := got[k]
		p := path + "." + k
		wm, ok1 := w.(map[string]any)
		gm, ok2 := g.(map[string]any)
		switch {
		case !hg:
			out = append(out, difference{p, "loses"})
		case !hw:
			out = append(out, difference{p, "invents"})
		case ok1 && ok2:
			out = append(out, diff(p, wm, gm)...)
		case !reflect.DeepEqual(w, g):
			out = append(out, difference{p, "changes"})
		}
	}
	return out
}

// judge returns the error of a difference of the round trip a to b and
// back, or nil when the annotation may carry it.
func (c *Converter) judge(d difference, a, b *template.Version) error {
	field := strings.TrimPrefix(d.path, "spec.")
	forward, backward := conversionOf(a, b), conversionOf(b, a)
	switch {
	case d.what == "invents":
		return c.refusal(d, a, b, backward)
	case reads(forward.source, field):
		return c.refusal(d, a, b, backward)
	case has(b.Spec, field):
		return c.refusal(d, a, b, forward)
	}
	return nil
}

// has tells whether the struct s declares the field at the dotted path,
// optional or not.
func has(s cue.Value, field string) bool {
	var sels []cue.Selector
	for _, f := range strings.Split(field, ".") {
		sels = append(sels, cue.Str(f).Optional())
	}
	return s.LookupPath(cue.MakePath(sels...)).Exists()
}

func (c *Converter) refusal(d difference, a, b *template.Version, at conv) error {
	return fmt.Errorf("%s: conversion %s (%s) %s field %s in the round trip %s to %s and back",
		at.pos, at.name, at.dir, d.what, d.path, a.Name, b.Name)
}

// conv names one conversion of a spoke: where it is and its source.
type conv struct {
	name, dir, pos string
	source         ast.Node
}

// conversionOf is the conversion from a to b, one of them the hub.
func conversionOf(a, b *template.Version) conv {
	if a.Hub {
		return conv{name: "versions." + b.Name + ".fromHub", dir: a.Name + " to " + b.Name, pos: position(b.FromHubDecl), source: b.FromHubDecl.Source()}
	}
	return conv{name: "versions." + a.Name + ".toHub", dir: a.Name + " to " + b.Name, pos: position(a.ToHubDecl), source: a.ToHubDecl.Source()}
}

func position(v cue.Value) string {
	if p := v.Pos(); p.IsValid() {
		return template.ShortPos(p)
	}
	return "template"
}

// reads tells whether the source of a conversion reads in.spec.<field>, a
// field within it or a struct holding it.
func reads(src ast.Node, field string) bool {
	if src == nil {
		return false
	}
	found := false
	ast.Walk(src, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || found {
			return !found
		}
		p, ok := selectorPath(sel)
		if !ok || !strings.HasPrefix(p, "in.spec.") {
			return true
		}
		p = strings.TrimPrefix(p, "in.spec.")
		found = p == field || strings.HasPrefix(field, p+".") || strings.HasPrefix(p, field+".")
		return false
	}, nil)
	return found
}

// selectorPath flattens in.spec.a.b into "in.spec.a.b".
func selectorPath(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name, true
	case *ast.SelectorExpr:
		base, ok := selectorPath(x.X)
		if !ok {
			return "", false
		}
		name, _, err := ast.LabelName(x.Sel)
		if err != nil {
			return "", false
		}
		return base + "." + name, true
	}
	return "", false
}
