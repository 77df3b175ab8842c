package schemacompat

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// junctions reports changes of anyOf, allOf, oneOf and not. An anyOf that
// keeps every old alternative (widened), an allOf or a not that is dropped,
// and an allOf whose every entry was there before are safe; any other
// change is breaking.
func (d *differ) junctions(p Path, o, n *apiextensionsv1.JSONSchemaProps) {
	if !sameJSON(o.AnyOf, n.AnyOf) {
		d.add(Change{Path: p, What: "anyOf", Old: text(o.AnyOf), New: text(n.AnyOf),
			Breaking: n.AnyOf != nil && (o.AnyOf == nil || !subset(o.AnyOf, n.AnyOf))})
	}
	if !sameJSON(o.AllOf, n.AllOf) {
		d.add(Change{Path: p, What: "allOf", Old: text(o.AllOf), New: text(n.AllOf), Breaking: !subset(n.AllOf, o.AllOf)})
	}
	if !sameJSON(o.OneOf, n.OneOf) {
		d.add(Change{Path: p, What: "oneOf", Old: text(o.OneOf), New: text(n.OneOf), Breaking: n.OneOf != nil})
	}
	if !sameJSON(o.Not, n.Not) {
		d.add(Change{Path: p, What: "not", Old: text(o.Not), New: text(n.Not), Breaking: n.Not != nil})
	}
}

// subset tells whether every schema of a is in b.
func subset(a, b []apiextensionsv1.JSONSchemaProps) bool {
	for _, x := range a {
		found := false
		for _, y := range b {
			if sameJSON(x, y) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// rest reports a change of any keyword the other checks do not compare
// (multipleOf, uniqueItems, x-kubernetes-list-type, ...): breaking, as
// nothing shows it safe.
func (d *differ) rest(p Path, o, n *apiextensionsv1.JSONSchemaProps) {
	if a, b := othersText(o), othersText(n); a != b {
		d.add(Change{Path: p, What: "schema", Old: a, New: b, Breaking: true})
	}
}

func othersText(s *apiextensionsv1.JSONSchemaProps) string {
	if t := text(others(s)); t != "{}" {
		return t
	}
	return ""
}

// others is s without the keywords compared elsewhere.
func others(s *apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		ID: s.ID, Schema: s.Schema, Ref: s.Ref, UniqueItems: s.UniqueItems, MultipleOf: s.MultipleOf,
		PatternProperties: s.PatternProperties, Dependencies: s.Dependencies, AdditionalItems: s.AdditionalItems,
		Definitions: s.Definitions, XEmbeddedResource: s.XEmbeddedResource, XListMapKeys: s.XListMapKeys,
		XListType: s.XListType, XMapType: s.XMapType,
	}
}
