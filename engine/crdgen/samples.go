package crdgen

import apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// Samples are specs of a CRD's spec schema to try a template's functions
// on (`cueop vet` converts each there and back): the smallest (Minimal),
// every bound at its limit (AtLimits) and every field set (Every).
func Samples(spec apiextensionsv1.JSONSchemaProps) []any {
	return []any{Minimal(spec, 0), AtLimits(spec, 0), Every(spec, 0)}
}

// Every returns a value of s with every property set, optional ones too,
// each at its smallest valid value (Minimal) or, for an object, with
// every property of its own.
func Every(s apiextensionsv1.JSONSchemaProps, i int) any {
	if s.Type != "object" || len(s.Properties) == 0 {
		return Minimal(s, i)
	}
	m := map[string]any{}
	for name, p := range s.Properties {
		m[name] = Every(p, i)
	}
	return m
}
