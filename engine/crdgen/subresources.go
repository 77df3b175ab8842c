package crdgen

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/cueop/cueop/engine/template"
)

// subresources returns the status subresource, which every kind has, and
// the scale subresource when the resource names its replica paths. The
// paths may omit the leading dot; they must name fields of the schema
// (integers for the replicas, a string for the label selector), which the
// API server itself does not check.
func subresources(res template.Resource, root *apiextensionsv1.JSONSchemaProps) (*apiextensionsv1.CustomResourceSubresources, error) {
	sub := &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	if res.Scale == nil {
		return sub, nil
	}
	scale := &apiextensionsv1.CustomResourceSubresourceScale{
		SpecReplicasPath:   dotted(res.Scale.SpecReplicasPath),
		StatusReplicasPath: dotted(res.Scale.StatusReplicasPath),
	}
	checks := []struct{ field, path, typ string }{
		{"resource.scale.specReplicasPath", scale.SpecReplicasPath, "integer"},
		{"resource.scale.statusReplicasPath", scale.StatusReplicasPath, "integer"},
	}
	if res.Scale.LabelSelectorPath != "" {
		scale.LabelSelectorPath = ptr(dotted(res.Scale.LabelSelectorPath))
		checks = append(checks, struct{ field, path, typ string }{
			"resource.scale.labelSelectorPath", *scale.LabelSelectorPath, "string"})
	}
	for _, c := range checks {
		if err := checkPath(root, c.field, c.path, c.typ); err != nil {
			return nil, err
		}
	}
	sub.Scale = scale
	return sub, nil
}

// dotted returns a simple JSON path with its leading dot.
func dotted(path string) string {
	if path == "" || strings.HasPrefix(path, ".") {
		return path
	}
	return "." + path
}

func checkPath(root *apiextensionsv1.JSONSchemaProps, field, path, typ string) error {
	if path == "" || strings.ContainsAny(path, "[]") {
		return nil // the API server reports empty and non-simple paths
	}
	s, ok := lookup(root, path)
	switch {
	case !ok:
		return fmt.Errorf("%s %s: no such field in the schema", field, path)
	case s != nil && s.Type != typ:
		return fmt.Errorf("%s %s: the field is of type %q, want %q", field, path, s.Type, typ)
	}
	return nil
}

// lookup follows a simple JSON path (.spec.replicas) through s. It returns
// nil and true for a path below x-kubernetes-preserve-unknown-fields.
func lookup(s *apiextensionsv1.JSONSchemaProps, path string) (*apiextensionsv1.JSONSchemaProps, bool) {
	for _, name := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		p, ok := s.Properties[name]
		switch {
		case ok:
			s = &p
		case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			s = s.AdditionalProperties.Schema
		case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields:
			return nil, true
		default:
			return nil, false
		}
	}
	return s, true
}
