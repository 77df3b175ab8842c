package schemacompat

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// differ collects the changes of one version's schema.
type differ struct {
	version string
	out     []Change
}

func (d *differ) add(c Change) {
	c.Version = d.version
	d.out = append(d.out, c)
}

// node compares the schemas of one field. A breaking change of its type or
// shape is its only change: what is below it no longer compares.
func (d *differ) node(p Path, o, n *apiextensionsv1.JSONSchemaProps) {
	if d.typ(p, o, n) || d.shape(p, o, n) {
		return
	}
	d.bounds(p, o, n)
	d.values(p, o, n)
	d.junctions(p, o, n)
	d.rest(p, o, n)
	d.description(p, o, n)
	renamed := d.properties(p, o, n)
	d.rules(p, o, n, renamed)
	if o.Items != nil && n.Items != nil && o.Items.Schema != nil && n.Items.Schema != nil {
		d.node(p.child(Items), o.Items.Schema, n.Items.Schema)
	}
	if mapValues(o) != nil && mapValues(n) != nil {
		d.node(p.child(Values), mapValues(o), mapValues(n))
	}
}

// typ reports a type change; it returns whether it was breaking. A type
// that accepts every value of the old one (integer to number, integer or
// string to int-or-string, anything to untyped) is safe.
func (d *differ) typ(p Path, o, n *apiextensionsv1.JSONSchemaProps) bool {
	ot, nt := typeName(o), typeName(n)
	if ot == nt {
		return false
	}
	old, next := types(o), types(n)
	widened := next == nil || (old != nil && !slices.ContainsFunc(old, func(t string) bool { return !slices.Contains(next, t) }))
	d.add(Change{Path: p, What: "type", Old: ot, New: nt, Breaking: !widened})
	return !widened
}

// typeName names the type of s as a user writes it.
func typeName(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int-or-string"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

// types are the JSON types s accepts; nil for any.
func types(s *apiextensionsv1.JSONSchemaProps) []string {
	switch {
	case s.XIntOrString:
		return []string{"integer", "string"}
	case s.Type == "number":
		return []string{"integer", "number"}
	case s.Type == "":
		return nil
	}
	return []string{s.Type}
}

// shape reports an object that changes between named fields, a map and
// unknown fields kept, and a list that changes its items' shape; it
// returns whether a change was breaking.
func (d *differ) shape(p Path, o, n *apiextensionsv1.JSONSchemaProps) bool {
	if o.Type != "object" {
		return false
	}
	op, np := preserves(o), preserves(n)
	switch {
	case op && !np:
		d.add(Change{Path: p, What: "x-kubernetes-preserve-unknown-fields", Old: "true", New: "false", Breaking: true})
		return true
	case !op && np:
		d.add(Change{Path: p, What: "x-kubernetes-preserve-unknown-fields", Old: "false", New: "true"})
	}
	om, nm := isMap(o), isMap(n)
	if om != nm {
		d.add(Change{Path: p, What: "shape", Old: shapeName(om), New: shapeName(nm), Breaking: true})
		return true
	}
	if ov, nv := mapValues(o) != nil, mapValues(n) != nil; om && ov != nv {
		// A map of any values became one of typed values (breaking), or back.
		d.add(Change{Path: p.child(Values), What: "type", Old: valuesName(ov), New: valuesName(nv), Breaking: nv})
		return nv
	}
	return false
}

func valuesName(typed bool) string {
	if typed {
		return "typed"
	}
	return "any"
}

func preserves(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

func isMap(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.AdditionalProperties != nil && (s.AdditionalProperties.Schema != nil || s.AdditionalProperties.Allows)
}

func shapeName(isMap bool) string {
	if isMap {
		return "map"
	}
	return "struct"
}

func mapValues(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s.AdditionalProperties == nil {
		return nil
	}
	return s.AdditionalProperties.Schema
}

// description reports a changed description, title or example: safe.
func (d *differ) description(p Path, o, n *apiextensionsv1.JSONSchemaProps) {
	if o.Description != n.Description || o.Title != n.Title || !sameJSON(o.Example, n.Example) || !sameJSON(o.ExternalDocs, n.ExternalDocs) {
		d.add(Change{Path: p, What: "description"})
	}
}
