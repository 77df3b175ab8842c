package schemacompat

import (
	"encoding/json"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// values reports changes of the enum, default, pattern, format and
// nullable of a field.
func (d *differ) values(p Path, o, n *apiextensionsv1.JSONSchemaProps) {
	d.enum(p, o.Enum, n.Enum)
	if !sameValue(o.Default, n.Default) {
		d.add(Change{Path: p, What: "default", Old: raw(o.Default), New: raw(n.Default), Breaking: true, OldDefault: o.Default})
	}
	d.text(p, "pattern", o.Pattern, n.Pattern)
	d.text(p, "format", o.Format, n.Format)
	if o.Nullable != n.Nullable {
		d.add(Change{Path: p, What: "nullable", Old: boolText(o.Nullable), New: boolText(n.Nullable), Breaking: o.Nullable})
	}
}

// enum reports enum values removed (breaking), an enum added (breaking)
// or dropped (safe), and values added (safe).
func (d *differ) enum(p Path, o, n []apiextensionsv1.JSON) {
	switch {
	case o == nil && n == nil:
		return
	case o == nil || n == nil:
		d.add(Change{Path: p, What: "enum", Old: enumText(o), New: enumText(n), Breaking: n != nil})
		return
	}
	var removed, added []apiextensionsv1.JSON
	for _, v := range o {
		if !containsValue(n, v) {
			removed = append(removed, v)
		}
	}
	for _, v := range n {
		if !containsValue(o, v) {
			added = append(added, v)
		}
	}
	if removed != nil {
		d.add(Change{Path: p, What: "enum values removed", Old: enumText(removed), Breaking: true})
	}
	if added != nil {
		d.add(Change{Path: p, What: "enum values added", New: enumText(added)})
	}
}

// text reports a string keyword (pattern, format) added or changed
// (breaking) or removed (safe).
func (d *differ) text(p Path, what, o, n string) {
	if o != n {
		d.add(Change{Path: p, What: what, Old: quote(o), New: quote(n), Breaking: n != ""})
	}
}

func quote(s string) string {
	if s == "" {
		return ""
	}
	b, _ := json.Marshal(s)
	return string(b)
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func enumText(vs []apiextensionsv1.JSON) string {
	if vs == nil {
		return ""
	}
	parts := make([]string, len(vs))
	for i := range vs {
		parts[i] = raw(&vs[i])
	}
	return strings.Join(parts, ", ")
}

// raw is a JSON value as compact text; "" for none.
func raw(v *apiextensionsv1.JSON) string {
	if v == nil {
		return ""
	}
	x, ok := decode(v)
	if !ok {
		return string(v.Raw)
	}
	return text(x)
}

func decode(v *apiextensionsv1.JSON) (any, bool) {
	var x any
	if v == nil || json.Unmarshal(v.Raw, &x) != nil {
		return nil, false
	}
	return x, true
}

// sameValue tells whether two JSON values are equal, whatever their
// formatting.
func sameValue(a, b *apiextensionsv1.JSON) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, okx := decode(a)
	y, oky := decode(b)
	return okx && oky && reflect.DeepEqual(x, y)
}

func containsValue(list []apiextensionsv1.JSON, v apiextensionsv1.JSON) bool {
	for i := range list {
		if sameValue(&list[i], &v) {
			return true
		}
	}
	return false
}
