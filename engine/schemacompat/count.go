package schemacompat

import (
	"encoding/json"
	"reflect"
)

// Count fills in each change's counts from the stored CRs, by version
// (each CR as the API server serves it at that version, as
// unstructured content): Set, the CRs that set the field (for a rule, the
// object it is on; for a version, every CR), and Defaulted, those whose
// value equals the old default.
func Count(cs []Change, crs map[string][]map[string]any) {
	for i := range cs {
		c := &cs[i]
		c.Counted, c.Stored, c.Set, c.Defaulted = true, 0, 0, 0
	}
	for version, objs := range crs {
		Tally(cs, version, objs)
	}
}

// Tally adds to the counts of each change at version those of objs, some of
// the CRs stored at it (a page of a list): the CRs need not be held all at
// once. Counts start at zero.
func Tally(cs []Change, version string, objs []map[string]any) {
	for i := range cs {
		c := &cs[i]
		if c.Version != version {
			continue
		}
		c.Counted = true
		c.Stored += len(objs)
		def, hasDef := decode(c.OldDefault)
		for _, obj := range objs {
			found := lookup(obj, c.Path)
			if len(found) > 0 {
				c.Set++
			}
			if hasDef && containsDeep(found, def) {
				c.Defaulted++
			}
		}
	}
}

// lookup returns the values at p in obj, every element or map value where
// p says Items or Values.
func lookup(obj any, p Path) []any {
	if len(p) == 0 {
		return []any{obj}
	}
	var next []any
	switch v := obj.(type) {
	case map[string]any:
		if p[0] == Values {
			for _, x := range v {
				next = append(next, x)
			}
		} else if x, ok := v[p[0]]; ok {
			next = append(next, x)
		}
	case []any:
		if p[0] == Items {
			next = v
		}
	}
	var out []any
	for _, x := range next {
		out = append(out, lookup(x, p[1:])...)
	}
	return out
}

// containsDeep tells whether one of vs equals want, compared as JSON
// values (an unstructured int64 equals the float64 JSON decodes).
func containsDeep(vs []any, want any) bool {
	for _, v := range vs {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		var x any
		if json.Unmarshal(b, &x) == nil && reflect.DeepEqual(x, want) {
			return true
		}
	}
	return false
}
