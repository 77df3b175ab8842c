package convert

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
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
		errs = c.judgeRoundTrip(a, b, in, mid, back)
		return nil
	})
	if errors.As(err, &ex) {
		return fmt.Errorf("round trip %s to %s and back: judging its differences: %w", from, via, err)
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

// Bounds of the judgement of a round trip (judgeRoundTrip), which must
// stay within the budget of one conversion whatever the spec: a list of
// 2000 elements a conversion loses must not cost 2000 conversions of the
// whole spec.
const (
	// judgeUnits bounds the conversions the judge evaluates to tell
	// whether the other version shows a difference (shown): each costs
	// the spec's size in units (specUnits: one a value, one a KiB of
	// string; a conversion allocates about 11 KiB of CUE a value), and
	// their sum stays within judgeUnits (about 45 MiB of the default
	// 128 MiB budget), at most maxJudgeEvaluations of them.
	judgeUnits          = 4096
	maxJudgeEvaluations = 64
	// maxRefusals are the refusals of one round trip given, and
	// maxDifferences the fields judged (a field of every element of a
	// list one): past either, the rest are counted in one more refusal,
	// not judged (never passed unjudged).
	maxRefusals    = 20
	maxDifferences = 10000
)

// judgeRoundTrip returns the refusals of the differences of the round
// trip a to b and back (in, through mid at b, to back). The differences
// are taken element by element, and judged with the conversions that
// tell what b shows (one for the differences of one field of a list's
// elements together, spec.backups[*].class, and one for each list), when
// those fit within judgeUnits; else with lists compared whole (the
// whole-value judgement), when those fit; else without evaluating
// anything: a field the conversion to b read is refused, as before the
// judgement went into lists (a refusal, never a pass, of what the budget
// cannot tell).
func (c *Converter) judgeRoundTrip(a, b *template.Version, in, mid, back map[string]any) []error {
	j := &judgement{c: c, a: a, b: b, in: in, mid: mid, back: back,
		forward: conversionOf(a, b), backward: conversionOf(b, a),
		same: map[string]bool{}, declared: map[string]bool{}}
	j.reads = readPaths(j.forward.source)
	units := max(1, specUnits(in))
	var ds []difference
	for _, intoLists := range []bool{true, false} {
		ds = diffAt("spec", nil, in, back, intoLists)
		if n := j.evaluations(ds); n <= maxJudgeEvaluations && n*units <= judgeUnits {
			j.evaluate = true
			break
		}
	}
	if j.evaluate {
		j.groups = map[string][]difference{}
		for _, d := range ds {
			j.groups[groupOf(d)] = append(j.groups[groupOf(d)], d)
		}
	}
	// A group's differences are judged alike (groupOf): the first is, the
	// others are counted in its refusal.
	type verdict struct {
		err  error
		more int
	}
	verdicts := map[string]*verdict{}
	var refused []*verdict
	for i, d := range ds {
		g := groupOf(d)
		if v, ok := verdicts[g]; ok {
			v.more++
			continue
		}
		if len(refused) == maxRefusals || len(verdicts) == maxDifferences {
			refused = append(refused, &verdict{err: fmt.Errorf("round trip %s to %s and back: %d more differences, from %s, not judged past %d refusals or %d fields",
				a.Name, b.Name, len(ds)-i, d.path, maxRefusals, maxDifferences)})
			break
		}
		v := &verdict{err: j.judge(d)}
		verdicts[g] = v
		if v.err != nil {
			refused = append(refused, v)
		}
	}
	var errs []error
	for _, v := range refused {
		if v.more > 0 {
			v.err = fmt.Errorf("%w (and %d more elements alike)", v.err, v.more)
		}
		errs = append(errs, v.err)
	}
	return errs
}

// specUnits is the cost of converting spec, in judgeUnits: one a value
// (a field, an element, a scalar), one a KiB of a string.
func specUnits(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 1
		for k, e := range x {
			n += len(k)/1024 + specUnits(e)
		}
		return n
	case []any:
		n := 1
		for _, e := range x {
			n += specUnits(e)
		}
		return n
	case string:
		return 1 + len(x)/1024
	}
	return 1
}

// difference is one field where a round trip differs: lost (only in the
// original), invented (only in the result) or changed. at is its path
// below spec: field names, and list indexes as ints.
type difference struct {
	path, what string
	at         []any
}

// diffPath is the path of a value being compared, from its innermost
// step out; a difference's path is spelled out only when it is found
// (not for each value compared: a deep spec costs no more than a flat
// one of as many values).
type diffPath struct {
	up  *diffPath
	key any // a field name, a list index
}

func (p *diffPath) difference(root, what string) difference {
	var at []any
	for q := p; q != nil; q = q.up {
		at = append(at, q.key)
	}
	slices.Reverse(at)
	var b strings.Builder
	b.WriteString(root)
	for _, k := range at {
		fmt.Fprintf(&b, ".%v", k)
	}
	return difference{b.String(), what, at}
}

// diff compares want and got at path, into structs; a list differs as a
// whole.
func diff(path string, want, got map[string]any) []difference {
	return diffAt(path, nil, want, got, false)
}

// diffAt compares want and got at path (below root, at), into structs
// and, with intoLists, into the elements of lists at the same index: an
// element lost past the result's length is lost; a list longer than the
// original changes as a whole. It reads each value once.
func diffAt(root string, at *diffPath, want, got map[string]any, intoLists bool) []difference {
	var out []difference
	keys := make([]string, 0, len(want)+len(got))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		w, hw := want[k]
		g, hg := got[k]
		p := &diffPath{at, k}
		switch {
		case !hg:
			out = append(out, p.difference(root, "loses"))
		case !hw:
			out = append(out, p.difference(root, "invents"))
		default:
			out = append(out, diffValue(root, p, w, g, intoLists)...)
		}
	}
	return out
}

func diffValue(root string, at *diffPath, w, g any, intoLists bool) []difference {
	wm, ok1 := w.(map[string]any)
	gm, ok2 := g.(map[string]any)
	if ok1 && ok2 {
		return diffAt(root, at, wm, gm, intoLists)
	}
	wl, ok1 := w.([]any)
	gl, ok2 := g.([]any)
	if !intoLists || !ok1 || !ok2 || len(gl) > len(wl) {
		if reflect.DeepEqual(w, g) {
			return nil
		}
		return []difference{at.difference(root, "changes")}
	}
	var out []difference
	for i := range wl {
		p := &diffPath{at, i}
		if i >= len(gl) {
			out = append(out, p.difference(root, "loses"))
			continue
		}
		out = append(out, diffValue(root, p, wl[i], gl[i], intoLists)...)
	}
	return out
}

// judgement judges the differences of one round trip a to b and back
// (in, through mid at b, to back).
type judgement struct {
	c                 *Converter
	a, b              *template.Version
	in, mid, back     map[string]any
	forward, backward conv
	reads             []string // the fields of in.spec forward reads
	// evaluate: shown is evaluated (within judgeUnits); else a field
	// forward read is taken as shown.
	evaluate bool
	groups   map[string][]difference // by groupOf
	same     map[string]bool         // shown's conversions, by group or list
	declared map[string]bool         // has(b.Spec), by path (any index alike)
}

// groupOf is the group of d that shown judges together: the differences
// of one kind (lost, changed) of one field of a list's elements
// (spec.backups[*].class); a difference outside lists is one alone.
func groupOf(d difference) string {
	return d.what + pathKey(d.at, true)
}

// evaluations is how many conversions judging ds evaluates at most.
func (j *judgement) evaluations(ds []difference) int {
	seen := map[string]bool{}
	for _, d := range ds {
		if d.what == "invents" || !j.read(d.path) {
			continue
		}
		seen[groupOf(d)] = true
		for i, s := range d.at {
			if _, ok := s.(int); ok {
				seen["list"+pathKey(d.at[:i], false)] = true
				break
			}
		}
	}
	return len(seen)
}

// judge returns the error of a difference, or nil when the annotation may
// carry it. A field the conversion to b read is refused when b shows it:
// in with that field as back holds it converts to another mid. A value b
// does not show (the second of two backups where b shows the first, a
// value beside each element of a list b shows) is what the annotation
// keeps, as the runtime does (checkObjectRoundTrip).
func (j *judgement) judge(d difference) error {
	switch {
	case d.what == "invents":
		return j.c.refusal(d, j.a, j.b, j.backward)
	case j.read(d.path) && (!j.evaluate || j.shown(d)):
		return j.c.refusal(d, j.a, j.b, j.backward)
	case j.has(d.at):
		return j.c.refusal(d, j.a, j.b, j.forward)
	}
	return nil
}

// read tells whether the conversion to b reads the field at path
// (spec.<field>), a field within it or a struct holding it.
func (j *judgement) read(path string) bool {
	field := strings.TrimPrefix(path, "spec.")
	for _, p := range j.reads {
		if p == field || strings.HasPrefix(field, p+".") || strings.HasPrefix(p, field+".") {
			return true
		}
	}
	return false
}

// has is has(b.Spec, at), once for the elements of a list alike, and
// false below a field b does not declare.
func (j *judgement) has(at []any) bool {
	k := pathKey(at, true)
	v, ok := j.declared[k]
	if !ok {
		v = (len(at) <= 1 || j.has(at[:len(at)-1])) && has(j.b.Spec, at)
		j.declared[k] = v
	}
	return v
}

// pathKey is a key of path: its field names, and its list indexes, or
// with anyIndex any index alike.
func pathKey(path []any, anyIndex bool) string {
	var b strings.Builder
	for _, s := range path {
		switch s := s.(type) {
		case string:
			b.WriteString(strconv.Quote(s))
		case int:
			if anyIndex {
				s = -1
			}
			fmt.Fprintf(&b, "[%d]", s)
		}
	}
	return b.String()
}

// shown tells whether b shows what d changed: in, with d's field as back
// holds it (lost: removed), converts to b otherwise than mid, and so does
// in with the whole list holding it as back holds it (a list b shows
// otherwise ordered, as a map, comes back reordered). The fields of d's
// group (groupOf: the same field of every element of a list) are taken
// as back holds them together, in one conversion: b shows them all when
// it shows them together. A conversion that fails tells nothing: shown.
// Each conversion is evaluated once.
func (j *judgement) shown(d difference) bool {
	same := func(key string, other func() map[string]any) bool {
		if v, ok := j.same[key]; ok {
			return v
		}
		_, got, err := j.c.specPath(other(), j.a, j.b)
		v := err == nil && reflect.DeepEqual(got, j.mid)
		j.same[key] = v
		return v
	}
	g := groupOf(d)
	if same(g, func() map[string]any { return j.edited(j.groups[g]) }) {
		return false
	}
	for i, s := range d.at {
		if _, ok := s.(int); ok {
			list := d.at[:i]
			return !same("list"+pathKey(list, false), func() map[string]any {
				return j.edited([]difference{{what: "changes", at: list}})
			})
		}
	}
	return true
}

// edit is one change of a spec: the value at path set, or removed.
type edit struct {
	at     []any
	val    any
	remove bool
}

// edited returns in with the fields of ds as back holds them (a field
// lost, or that back lacks, removed); in is not modified. It copies each
// struct and list on their paths once.
func (j *judgement) edited(ds []difference) map[string]any {
	var es []edit
	for _, d := range ds {
		if v, ok := lookupAny(j.back, d.at); ok && d.what != "loses" {
			es = append(es, edit{at: d.at, val: v})
		} else if _, ok := lookupAny(j.in, d.at); ok {
			es = append(es, edit{at: d.at, remove: true})
		}
	}
	return applyEdits(j.in, es).(map[string]any)
}

// applyEdits returns v with es made (their paths below v); v is not
// modified.
func applyEdits(v any, es []edit) any {
	if len(es) == 0 {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := maps.Clone(x)
		below := map[string][]edit{}
		for _, e := range es {
			k, ok := e.at[0].(string)
			switch {
			case !ok:
			case len(e.at) > 1:
				below[k] = append(below[k], edit{e.at[1:], e.val, e.remove})
			case e.remove:
				delete(out, k)
			default:
				out[k] = e.val
			}
		}
		for k, sub := range below {
			if cur, ok := out[k]; ok {
				out[k] = applyEdits(cur, sub)
			}
		}
		return out
	case []any:
		out := slices.Clone(x)
		below := map[int][]edit{}
		drop := map[int]bool{}
		for _, e := range es {
			i, ok := e.at[0].(int)
			switch {
			case !ok || i < 0 || i >= len(x):
			case len(e.at) > 1:
				below[i] = append(below[i], edit{e.at[1:], e.val, e.remove})
			case e.remove:
				drop[i] = true
			default:
				out[i] = e.val
			}
		}
		for i, sub := range below {
			out[i] = applyEdits(out[i], sub)
		}
		if len(drop) > 0 {
			kept := out[:0]
			for i, e := range out {
				if !drop[i] {
					kept = append(kept, e)
				}
			}
			out = kept
		}
		return out
	}
	return v
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

// readPaths are the fields of in.spec the source of a conversion reads
// (in.spec.a.b: "a.b"), each selector once, outermost.
func readPaths(src ast.Node) []string {
	if src == nil {
		return nil
	}
	var out []string
	ast.Walk(src, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		p, ok := selectorPath(sel)
		if !ok || !strings.HasPrefix(p, "in.spec.") {
			return true
		}
		out = append(out, strings.TrimPrefix(p, "in.spec."))
		return false
	}, nil)
	return out
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
