package schemacompat

import (
	"slices"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// properties compares the named fields of an object: removed (breaking),
// renamed (breaking, one change for a removal and an addition of the same
// schema), added (safe unless required without a default), made required
// (breaking unless defaulted) and the fields both have, recursively. It
// returns the renames, old name to new.
func (d *differ) properties(p Path, o, n *apiextensionsv1.JSONSchemaProps) map[string]string {
	var removed, added, common []string
	for name := range o.Properties {
		if _, ok := n.Properties[name]; ok {
			common = append(common, name)
		} else {
			removed = append(removed, name)
		}
	}
	for name := range n.Properties {
		if _, ok := o.Properties[name]; !ok {
			added = append(added, name)
		}
	}
	sort.Strings(removed)
	sort.Strings(added)
	sort.Strings(common)
	renamed := renames(o, n, removed, added)
	for _, name := range removed {
		if to, ok := renamed[name]; ok {
			d.add(Change{Path: p.child(name), NewPath: p.child(to), What: "renamed", Breaking: true})
			continue
		}
		d.add(Change{Path: p.child(name), What: "removed", Breaking: true})
	}
	for _, name := range added {
		if !slices.Contains(values(renamed), name) {
			d.added(p.child(name), n.Properties[name], slices.Contains(n.Required, name), preserves(o))
		}
	}
	for _, name := range common {
		op, np := o.Properties[name], n.Properties[name]
		d.required(p.child(name), slices.Contains(o.Required, name), slices.Contains(n.Required, name), np.Default != nil)
		d.node(p.child(name), &op, &np)
	}
	return renamed
}

// added reports a new field: safe when optional or defaulted, unless the
// object kept unknown fields (kept, when the old object preserved them): a
// stored CR may hold the field already, with any value.
func (d *differ) added(p Path, s apiextensionsv1.JSONSchemaProps, required, kept bool) {
	c := Change{Path: p, What: "added", New: "optional"}
	switch {
	case kept:
		c.New, c.Breaking = "typed where unknown fields were kept", true
	case s.Default != nil:
		c.New = "default " + raw(s.Default)
	case required:
		c.New, c.Breaking = "required", true
	}
	d.add(c)
}

func (d *differ) required(p Path, was, is, defaulted bool) {
	switch {
	case is && !was:
		d.add(Change{Path: p, What: "required", Old: "optional", New: "required", Breaking: !defaulted})
	case was && !is:
		d.add(Change{Path: p, What: "required", Old: "required", New: "optional"})
	}
}

// renames pairs each removed field with the one added field of the same
// schema (descriptions aside) and requiredness, where the pairing is
// unambiguous both ways.
func renames(o, n *apiextensionsv1.JSONSchemaProps, removed, added []string) map[string]string {
	out := map[string]string{}
	match := func(r, a string) bool {
		return sameShape(o.Properties[r], n.Properties[a]) &&
			slices.Contains(o.Required, r) == slices.Contains(n.Required, a)
	}
	for _, r := range removed {
		var cands []string
		for _, a := range added {
			if match(r, a) {
				cands = append(cands, a)
			}
		}
		if len(cands) != 1 {
			continue
		}
		back := 0
		for _, r2 := range removed {
			if match(r2, cands[0]) {
				back++
			}
		}
		if back == 1 {
			out[r] = cands[0]
		}
	}
	return out
}

func values(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// sameShape tells whether two schemas are the same but for their
// descriptions.
func sameShape(a, b apiextensionsv1.JSONSchemaProps) bool {
	return text(undocumented(a)) == text(undocumented(b))
}

func undocumented(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	s.Description, s.Title, s.Example, s.ExternalDocs = "", "", nil, nil
	if s.Properties != nil {
		props := make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
		for k, v := range s.Properties {
			props[k] = undocumented(v)
		}
		s.Properties = props
	}
	if s.Items != nil && s.Items.Schema != nil {
		items := undocumented(*s.Items.Schema)
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}
	}
	if v := mapValues(&s); v != nil {
		values := undocumented(*v)
		s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values}
	}
	return s
}
