package crdgen

import (
	"maps"
	"reflect"
	"slices"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// maxAbsent bounds the samples with one optional field left out.
const maxAbsent = 64

// Samples are specs of a CRD's spec schema to try a template's functions
// on (`cueop vet` and the operator's reload convert each there and back):
// the smallest (Minimal), every bound at its limit (AtLimits), every
// field set (Every), every field set with each list and map of one and of
// two elements, as far as maxFilled elements go (Filled), and, for each optional field at any depth (up to
// 64), every field set but that one (Absent): a conversion may lose what
// only a list's elements, or an optional field absent beside a sibling
// that is set, show. Each sample is given once.
func Samples(spec apiextensionsv1.JSONSchemaProps) []any {
	var out []any
	add := func(v any) {
		for _, o := range out {
			if reflect.DeepEqual(o, v) {
				return
			}
		}
		out = append(out, v)
	}
	for _, v := range []any{Minimal(spec, 0), AtLimits(spec, 0), Every(spec, 0), Filled(spec, 0, 1), Filled(spec, 0, 2)} {
		add(v)
	}
	for _, v := range Absent(spec, 1) {
		add(v)
	}
	return out
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

// maxFilled bounds the list elements and map entries Filled makes: past
// it, each list and map holds one (a schema of lists of lists 30 deep
// would otherwise be filled with 2^30 elements).
const maxFilled = 4096

// Filled returns a value of s with every property set, as Every does, and
// each list, and each map (an object of additionalProperties), holding n
// elements (within its bounds on items or properties), each one filled
// alike and distinct from the others (its index given as i); once
// maxFilled elements are made, one each.
func Filled(s apiextensionsv1.JSONSchemaProps, i, n int) any {
	left := maxFilled
	return filled(s, i, n, &left)
}

func filled(s apiextensionsv1.JSONSchemaProps, i, n int, left *int) any {
	count := func(least, most *int64) int {
		k := n
		if *left < n {
			k = 1
		}
		k = within(k, least, most)
		*left -= k
		return k
	}
	switch {
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		l := make([]any, count(s.MinItems, s.MaxItems))
		for j := range l {
			l[j] = filled(*s.Items.Schema, j, n, left)
		}
		return l
	case s.Type == "object" && len(s.Properties) > 0:
		m := map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			m[name] = filled(s.Properties[name], i, n, left)
		}
		return m
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		m := map[string]any{}
		for j := range count(s.MinProperties, s.MaxProperties) {
			m[distinct(j, 8)] = filled(*s.AdditionalProperties.Schema, j, n, left)
		}
		return m
	}
	return Minimal(s, i)
}

// within is n, raised to least and lowered to most where they are set.
func within(n int, least, most *int64) int {
	if least != nil && int64(n) < *least {
		n = int(*least)
	}
	if most != nil && int64(n) > *most {
		n = int(*most)
	}
	return n
}

// Absent returns, for each optional property of s at any depth (in the
// first element of a list or map), Filled(s, 0, n) without that property,
// its siblings set: up to 64 of them, the shallowest first.
func Absent(s apiextensionsv1.JSONSchemaProps, n int) []any {
	base := Filled(s, 0, n)
	var paths [][]any
	var walk func(s apiextensionsv1.JSONSchemaProps, v any, path []any)
	walk = func(s apiextensionsv1.JSONSchemaProps, v any, path []any) {
		switch v := v.(type) {
		case map[string]any:
			names := make([]string, 0, len(s.Properties))
			for name := range s.Properties {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				p := append(slices.Clip(path), name)
				if !slices.Contains(s.Required, name) {
					paths = append(paths, p)
				}
				walk(s.Properties[name], v[name], p)
			}
			if len(s.Properties) == 0 && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && len(v) > 0 {
				keys := make([]string, 0, len(v))
				for k := range v {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				walk(*s.AdditionalProperties.Schema, v[keys[0]], append(slices.Clip(path), keys[0]))
			}
		case []any:
			if len(v) > 0 && s.Items != nil && s.Items.Schema != nil {
				walk(*s.Items.Schema, v[0], append(slices.Clip(path), 0))
			}
		}
	}
	walk(s, base, nil)
	sort.SliceStable(paths, func(a, b int) bool { return len(paths[a]) < len(paths[b]) })
	if len(paths) > maxAbsent {
		paths = paths[:maxAbsent]
	}
	out := make([]any, 0, len(paths))
	for _, p := range paths {
		out = append(out, without(base, p))
	}
	return out
}

// without is a copy of v lacking the property at path (property names,
// and list indexes as ints).
func without(v any, path []any) any {
	switch x := v.(type) {
	case map[string]any:
		k, _ := path[0].(string)
		out := make(map[string]any, len(x))
		for kk, vv := range x {
			if kk != k {
				out[kk] = vv
			} else if len(path) > 1 {
				out[kk] = without(vv, path[1:])
			}
		}
		return out
	case []any:
		i, ok := path[0].(int)
		out := append([]any(nil), x...)
		if ok && i < len(out) && len(path) > 1 {
			out[i] = without(out[i], path[1:])
		}
		return out
	}
	return v
}
