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
	var in, mid, back map[string]any
	err := c.budget.Run("convert/"+c.kind.Name, func(*budget.Tracker) error {
		i, m, err := c.specPath(spec, a, b)
		if err != nil {
			if errors.Is(err, errInput) {
				return ErrInvalidInput
			}
			return fmt.Errorf("conversion %s to %s: %w", from, via, err)
		}
		_, bk, err := c.specPath(m, b, a)
		if err != nil {
			return fmt.Errorf("conversion %s to %s of %v: %w", via, from, m, err)
		}
		in, mid, back = i, m, bk
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
	err = c.budget.Run("convert/"+c.kind.Name, func(*budget.Tracker) error {
		for _, d := range diffAt("spec", nil, in, back, true) {
			errs = append(errs, c.judge(d, a, b, in, mid, back))
		}
		return nil
	})
	if errors.As(err, &ex) {
		return fmt.Errorf("round trip %s to %s and back: %w", from, via, err)
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
// original), invented (only in the result) or changed. at is its path
// below spec: field names, and list indexes as ints.
type difference struct {
	path, what string
	at         []any
}

// diff compares want and got at path, into structs; a list differs as a
// whole.
func diff(path string, want, got map[string]any) []difference {
	return diffAt(path, nil, want, got, false)
}

// diffAt compares want and got at path (at), into structs and, with
// intoLists, into the elements of lists at the same index: an element
// lost past the result's length is lost, a list longer than the original
// changes as a whole.
func diffAt(path string, at []any, want, got map[string]any, intoLists bool) []difference {
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
		p, pa := path+"."+k, append(append([]any(nil), at...), k)
		switch {
		case !hg:
			out = append(out, difference{p, "loses", pa})
		case !hw:
			out = append(out, difference{p, "invents", pa})
		default:
			out = append(out, diffValue(p, pa, w, g, intoLists)...)
		}
	}
	return out
}

func diffValue(path string, at []any, w, g any, intoLists bool) []difference {
	wm, ok1 := w.(map[string]any)
	gm, ok2 := g.(map[string]any)
	if ok1 && ok2 {
		return diffAt(path, at, wm, gm, intoLists)
	}
	wl, ok1 := w.([]any)
	gl, ok2 := g.([]any)
	switch {
	case reflect.DeepEqual(w, g):
		return nil
	case !intoLists || !ok1 || !ok2 || len(gl) > len(wl):
		return []difference{{path, "changes", at}}
	}
	var out []difference
	for i := range wl {
		p, pa := fmt.Sprintf("%s.%d", path, i), append(append([]any(nil), at...), i)
		if i >= len(gl) {
			out = append(out, difference{p, "loses", pa})
			continue
		}
		out = append(out, diffValue(p, pa, wl[i], gl[i], intoLists)...)
	}
	return out
}

// judge returns the error of a difference of the round trip a to b and
// back (in, through mid at b, to back), or nil when the annotation may
// carry it. A field the conversion to b read is refused when b shows it:
// in with that field as back holds it converts to another mid. A value b
// does not show (the second of two backups where b shows the first, a
// value beside each element of a list b shows) is what the annotation
// keeps, as the runtime does (checkObjectRoundTrip).
func (c *Converter) judge(d difference, a, b *template.Version, in, mid, back map[string]any) error {
	field := strings.TrimPrefix(d.path, "spec.")
	forward, backward := conversionOf(a, b), conversionOf(b, a)
	switch {
	case d.what == "invents":
		return c.refusal(d, a, b, backward)
	case reads(forward.source, field) && c.shown(d, a, b, in, mid, back):
		return c.refusal(d, a, b, backward)
	case has(b.Spec, d.at):
		return c.refusal(d, a, b, forward)
	}
	return nil
}

// shown tells whether b shows what d changed: in, with d's field as back
// holds it (lost: removed), converts to b otherwise than mid, and so does
// in with the whole list holding it as back holds it (a list b shows
// otherwise ordered, as a map, comes back reordered). A conversion that
// fails tells nothing: shown.
func (c *Converter) shown(d difference, a, b *template.Version, in, mid, back map[string]any) bool {
	same := func(path []any, lost bool) bool {
		other := in
		if v, ok := lookupAny(back, path); ok && !lost {
			other = setAt(in, path, v)
		} else if _, ok := lookupAny(in, path); ok {
			other = removed(in, path)
		}
		_, got, err := c.specPath(other, a, b)
		return err == nil && reflect.DeepEqual(got, mid)
	}
	if same(d.at, d.what == "loses") {
		return false
	}
	for i, s := range d.at {
		if _, ok := s.(int); ok {
			return !same(d.at[:i], false)
		}
	}
	return true
}

// setAt returns m with v at path (field names and list indexes, each
// there already); m is not modified.
func setAt(m map[string]any, path []any, v any) map[string]any {
	var set func(cur any, path []any) any
	set = func(cur any, path []any) any {
		if len(path) == 0 {
			return v
		}
		switch x := cur.(type) {
		case map[string]any:
			k, _ := path[0].(string)
			out := make(map[string]any, len(x))
			for kk, vv := range x {
				out[kk] = vv
			}
			out[k] = set(x[k], path[1:])
			return out
		case []any:
			i, ok := path[0].(int)
			if !ok || i >= len(x) {
				return x
			}
			out := append([]any(nil), x...)
			out[i] = set(x[i], path[1:])
			return out
		}
		return cur
	}
	return set(m, path).(map[string]any)
}

// has tells whether the struct s declares the field at path (field names
// and list indexes), optional or not.
func has(s cue.Value, at []any) bool {
	if len(at) == 0 {
		return s.Exists()
	}
	switch f := at[0].(type) {
	case string:
		return has(s.LookupPath(cue.MakePath(cue.Str(f).Optional())), at[1:])
	case int: // a list's element: the element of any list s may be
		_, alts := s.Expr() // the disjuncts of *[] | [...T]
		alts = append(alts, s)
		for _, l := range alts {
			if e := l.LookupPath(cue.MakePath(cue.AnyIndex)); e.Exists() && has(e, at[1:]) {
				return true
			}
		}
	}
	return false
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
