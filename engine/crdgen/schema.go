package crdgen

import (
	"slices"
	"strings"

	"cuelang.org/go/cue"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Schema converts one CUE value into a structural OpenAPI v3 schema as the
// apiextensions.k8s.io/v1 API wants it. v is read as a regular CUE field:
// its default, or its value when that is concrete, becomes the schema's
// default (for a struct: `{}`, so that the API server fills in the defaults
// of its fields). Errors are *SchemaError values naming the field path and
// the CUE position.
func Schema(v cue.Value) (*apiextensionsv1.JSONSchemaProps, error) {
	return newWalker(v).field(v, regularField, rootLoc(v, ""))
}

// walker turns cue.Values into schemas. It caches the values it compiles
// to test whether a constraint accepts a whole kind; one walker serves one
// conversion and is not safe for concurrent use.
type walker struct {
	ctx  *cue.Context
	tops map[cue.Kind]cue.Value
}

func newWalker(v cue.Value) *walker {
	return &walker{ctx: v.Context(), tops: map[cue.Kind]cue.Value{}}
}

// acceptsAll reports whether v accepts every value of kind k, i.e. whether
// v is nothing but a basic type.
func (w *walker) acceptsAll(v cue.Value, k cue.Kind) bool {
	if kindSource(k) == "" {
		return false
	}
	top, ok := w.tops[k]
	if !ok {
		top = w.ctx.CompileString(kindSource(k))
		w.tops[k] = top
	}
	return v.Subsume(top) == nil
}

// fieldMode is how a value is reached, which decides required and default.
type fieldMode int

const (
	elementField  fieldMode = iota // a list element or map value
	regularField                   // `a: T`: required unless concrete; its default is set
	optionalField                  // `a?: T`
	requiredField                  // `a!: T`
)

func modeOf(sel cue.Selector) fieldMode {
	switch sel.ConstraintType() {
	case cue.OptionalConstraint:
		return optionalField
	case cue.RequiredConstraint:
		return requiredField
	}
	return regularField
}

// field returns the schema of a field's value, with its description and,
// for a regular field, its default.
func (w *walker) field(v cue.Value, mode fieldMode, l loc) (*apiextensionsv1.JSONSchemaProps, error) {
	s, err := w.schema(v, l)
	if err != nil {
		return nil, err
	}
	if mode == regularField {
		if s.Default, err = defaultOf(v, s, l); err != nil {
			return nil, err
		}
	}
	s.Description = docString(v)
	return s, nil
}

// schema returns the schema of v without description and default.
func (w *walker) schema(v cue.Value, l loc) (*apiextensionsv1.JSONSchemaProps, error) {
	if err := l.checkDepth(v); err != nil {
		return nil, err
	}
	kind := kindOf(v)
	switch {
	case !v.Exists() || kind == cue.BottomKind || isFatal(v):
		return nil, l.wrap(v, v.Err(), "invalid value")
	case kind == cue.TopKind:
		return w.anyValue(v, l)
	}
	s := &apiextensionsv1.JSONSchemaProps{Nullable: kind&cue.NullKind != 0}
	kind &^= cue.NullKind
	var err error
	switch {
	case kind == cue.StructKind:
		err = w.object(s, v, l)
	case kind == cue.ListKind:
		err = w.array(s, v, l)
	case scalarType(s, kind):
		err = w.scalar(s, v, l)
	case kind == cue.BottomKind:
		err = l.errorf(v, "a field that can only be null cannot be expressed in a structural schema")
	default:
		err = l.errorf(v, "%s can be %s, but a structural schema gives a field one type "+
			"(int | string is the exception)", formatValue(v), kindSource(kind))
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// anyValue maps `_`: any value, kept as it is.
func (w *walker) anyValue(v cue.Value, l loc) (*apiextensionsv1.JSONSchemaProps, error) {
	f, err := w.constraints(v, l)
	if err != nil {
		return nil, err
	}
	if !f.empty() {
		return nil, l.errorf(v, "constraints on a value of any type (%s) cannot be expressed; give the field a type", formatValue(v))
	}
	return &apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}, nil
}

func (w *walker) scalar(s *apiextensionsv1.JSONSchemaProps, v cue.Value, l loc) error {
	f, err := w.constraints(v, l)
	if err != nil {
		return err
	}
	f.apply(s)
	if s.Type == "integer" {
		intFormat(s)
	}
	dropWideBounds(s)
	return nil
}

// array maps `[...T]`: items from T, minItems and maxItems from
// list.MinItems and list.MaxItems.
func (w *walker) array(s *apiextensionsv1.JSONSchemaProps, v cue.Value, l loc) error {
	base, err := w.base(v, l)
	if err != nil {
		return err
	}
	elem := base.LookupPath(cue.MakePath(cue.AnyIndex))
	if hasPrefix(base) || !elem.Exists() {
		return l.errorf(v, "list %s has fixed elements, which a structural schema cannot express; use [...T]", formatValue(base))
	}
	items, err := w.field(elem, elementField, l.elem(elem))
	if err != nil {
		return err
	}
	f, err := w.constraints(v, l)
	if err != nil {
		return err
	}
	s.Type = "array"
	s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}
	f.apply(s)
	return nil
}

// hasPrefix reports whether the list v has elements of its own, as in
// `[int, ...string]` or `["a", "b"]`.
func hasPrefix(v cue.Value) bool {
	it, err := v.List()
	return err == nil && it.Next()
}

// docString returns v's doc comments as one description.
func docString(v cue.Value) string {
	var parts []string
	for _, d := range v.Doc() {
		if t := strings.TrimSpace(d.Text()); t != "" && !slices.Contains(parts, t) {
			parts = append(parts, t)
		}
	}
	return reflow(strings.Join(parts, "\n\n")) // docs.go
}

// concrete reports whether v, with its defaults, is a complete value: a
// regular field that is not concrete must be given, so it is required.
func concrete(v cue.Value) bool {
	return v.Validate(cue.Concrete(true)) == nil
}

// defaultOf returns the default of a regular field: its CUE default, or its
// value when that is concrete. A struct without an explicit default gets
// `{}` (its fields bring their own defaults); null and the empty list are
// no defaults worth writing.
func defaultOf(v cue.Value, s *apiextensionsv1.JSONSchemaProps, l loc) (*apiextensionsv1.JSON, error) {
	if s.Type == "" && !s.XIntOrString {
		return nil, nil
	}
	d, explicit := v.Default()
	switch {
	case !concrete(d) || d.IsNull():
		return nil, nil
	case s.Type == "object" && !explicit:
		return &apiextensionsv1.JSON{Raw: []byte("{}")}, nil
	}
	b, err := d.MarshalJSON()
	if err != nil {
		return nil, l.wrap(v, err, "default %s", formatValue(d))
	}
	if string(b) == "[]" {
		return nil, nil
	}
	return &apiextensionsv1.JSON{Raw: b}, nil
}
