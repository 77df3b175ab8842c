package schemacompat

import (
	"encoding/json"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CompareCRDs returns the changes from old to next, version by version: for
// each version old serves, its removal (breaking when old's
// status.storedVersions lists it, or when old has no status, as a CRD read
// from a file), or the changes of its schema, printer columns and
// subresources; then each version next adds (safe).
func CompareCRDs(old, next *apiextensionsv1.CustomResourceDefinition) []Change {
	var out []Change
	for i := range old.Spec.Versions {
		v := &old.Spec.Versions[i]
		if !v.Served {
			continue
		}
		n := version(next, v.Name)
		if n == nil || !n.Served {
			out = append(out, Change{Version: v.Name, What: "version", Old: "served", New: "not served",
				Breaking: stored(old, v.Name)})
			continue
		}
		out = append(out, compareVersion(v, n)...)
	}
	for _, n := range next.Spec.Versions {
		if v := version(old, n.Name); n.Served && (v == nil || !v.Served) {
			out = append(out, Change{Version: n.Name, What: "version", Old: "not served", New: "served"})
		}
	}
	return out
}

func version(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// stored tells whether CRs may be stored at version name of crd.
func stored(crd *apiextensionsv1.CustomResourceDefinition, name string) bool {
	return len(crd.Status.StoredVersions) == 0 || slices.Contains(crd.Status.StoredVersions, name)
}

func compareVersion(old, next *apiextensionsv1.CustomResourceDefinitionVersion) []Change {
	out := Compare(old.Name, schemaOf(old), schemaOf(next))
	if !sameJSON(old.AdditionalPrinterColumns, next.AdditionalPrinterColumns) {
		out = append(out, Change{Version: old.Name, What: "printer columns"})
	}
	if !sameJSON(old.Subresources, next.Subresources) {
		out = append(out, Change{Version: old.Name, What: "subresources", Old: text(old.Subresources), New: text(next.Subresources)})
	}
	return out
}

func schemaOf(v *apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return &apiextensionsv1.JSONSchemaProps{}
	}
	return v.Schema.OpenAPIV3Schema
}

// Compare returns the changes from the schema old to next of one version,
// from the root of the CR; the status subtree is left out.
func Compare(version string, old, next *apiextensionsv1.JSONSchemaProps) []Change {
	d := &differ{version: version}
	o, n := *old, *next
	o.Properties, n.Properties = withoutStatus(o.Properties), withoutStatus(n.Properties)
	d.node(nil, &o, &n)
	return d.out
}

func withoutStatus(props map[string]apiextensionsv1.JSONSchemaProps) map[string]apiextensionsv1.JSONSchemaProps {
	if _, ok := props["status"]; !ok {
		return props
	}
	out := make(map[string]apiextensionsv1.JSONSchemaProps, len(props))
	for k, v := range props {
		if k != "status" {
			out[k] = v
		}
	}
	return out
}

// sameJSON tells whether a and b encode to the same JSON.
func sameJSON(a, b any) bool { return text(a) == text(b) }

// text is v as compact JSON; "" for nothing.
func text(v any) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return ""
	}
	return string(b)
}
